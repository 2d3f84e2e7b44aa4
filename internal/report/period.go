package report

import (
	"errors"
	"strings"
	"time"

	"github.com/reportjob/reportjob/internal/keys"
)

// Periods is every allowed report period: each divides a UTC day evenly.
var Periods = []time.Duration{
	15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour,
	4 * time.Hour, 6 * time.Hour, 8 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// Quarter is the width of one partition of the data table.
const Quarter = 15 * time.Minute

// ErrNoStart means there is no checkpoint and no report.start.
var ErrNoStart = errors.New("no checkpoint yet and report.start is unset: set report.start to the first period to report")

// Period is a half-open UTC interval [Start, End).
type Period struct {
	Start, End time.Time
}

// PeriodAt returns the period of length d that contains t. Periods are
// aligned to UTC midnight.
func PeriodAt(t time.Time, d time.Duration) Period {
	t = t.UTC()
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	start := midnight.Add(t.Sub(midnight) / d * d)
	return Period{Start: start, End: start.Add(d)}
}

// Aligned reports whether t is a boundary of periods of length d.
func Aligned(t time.Time, d time.Duration) bool {
	return PeriodAt(t, d).Start.Equal(t.UTC())
}

// FormatDuration writes d as people write periods: 1h, 15m, 2m30s
// (time.Duration.String gives 1h0m0s).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "h0m0s") {
		return strings.TrimSuffix(s, "0m0s")
	}
	return strings.TrimSuffix(s, "0s")
}

// Name is the period's folder name: its start as YYYYMMDDTHHMMZ.
func (p Period) Name() string { return p.Start.UTC().Format("20060102T1504Z") }

func (p Period) String() string {
	return p.Start.UTC().Format(time.RFC3339) + "/" + p.End.UTC().Format(time.RFC3339)
}

// Quarters returns the start of every quarter hour in the period, in order.
func (p Period) Quarters() []time.Time {
	var qs []time.Time
	for t := p.Start; t.Before(p.End); t = t.Add(Quarter) {
		qs = append(qs, t)
	}
	return qs
}

// ReadShards is the shard count period p is read with: keys.shards, or
// more when delivered (the partition keys its published manifest read)
// has sharded keys of p's quarters with a higher shard number. This is the
// one place that decides which partitions a period is read from: lowering
// keys.shards never loses the items a delivered period billed from the
// shards it drops, and raising it only adds partitions, so that a period's
// items, compared by content, stay the same across a change of
// keys.shards either way.
func ReadShards(p Period, shards int, delivered []string) int {
	for _, pk := range delivered {
		q, k, err := keys.ParsePartition(pk)
		if err != nil || !strings.Contains(pk, "#") || q.Before(p.Start) || !q.Before(p.End) {
			continue
		}
		shards = max(shards, k+1)
	}
	return shards
}

// Partitions returns the partition keys of p, in order: for each quarter,
// the plain key, then with keys.shards N > 1 the N sharded keys. The plain
// key is read even when sharded, so that items of producers that do not
// shard (or written before sharding was turned on) are never missed.
func Partitions(p Period, shards int) []string {
	var pks []string
	for _, q := range p.Quarters() {
		pks = append(pks, keys.Quarter(q))
		if shards > 1 {
			for k := 0; k < shards; k++ {
				pks = append(pks, keys.Partition(q, k, shards))
			}
		}
	}
	return pks
}
