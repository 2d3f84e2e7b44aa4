package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/reportjob/reportjob/internal/item"
)

// Reject is one line of rejects.jsonl: an item that cannot be billed, with
// its keys, the reason, and the item as read.
type Reject struct {
	PartitionKey string                    `json:"partition_key"`
	SortKey      string                    `json:"sort_key"`
	Field        string                    `json:"field,omitempty"`
	Value        string                    `json:"value,omitempty"`
	Reason       string                    `json:"reason"`
	Item         map[string]map[string]any `json:"item"`
}

func newReject(it item.Item, field, value, reason string) Reject {
	attrs := make(map[string]map[string]any, len(it.Attrs))
	for name, v := range it.Attrs {
		attrs[name] = map[string]any{v.Type.String(): v.Text}
	}
	return Reject{PartitionKey: it.PK, SortKey: it.SK, Field: field, Value: value, Reason: reason, Item: attrs}
}

// rejectLog streams rejects as JSON lines to a temp file, created with the
// first reject, so that a period of bad data costs disk, not memory. One
// log is written by one goroutine at a time.
type rejectLog struct {
	dir string
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	n   int64
}

func (l *rejectLog) add(r Reject) error {
	if l.f == nil {
		f, err := os.CreateTemp(l.dir, "rejects-*.jsonl")
		if err != nil {
			return fmt.Errorf("rejects: %w", err)
		}
		l.f, l.w = f, bufio.NewWriterSize(f, 64<<10)
		l.enc = json.NewEncoder(l.w)
		l.enc.SetEscapeHTML(false)
	}
	l.n++
	if err := l.enc.Encode(&r); err != nil {
		return fmt.Errorf("rejects: %w", err)
	}
	return nil
}

// finish flushes and closes the log; it can then be copied.
func (l *rejectLog) finish() error {
	if l.f == nil {
		return nil
	}
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rejects: %w", err)
	}
	return nil
}

// joinRejects writes the logs, in order, as one file at path and returns
// the number of rejects and what was written (counted and hashed). Each
// partition's log is in sort key order (Query's order) and the logs are
// in the period's partition order, so the file is deterministic without
// sorting.
func joinRejects(path string, logs []*rejectLog) (int64, *hashWriter, error) {
	out, err := os.Create(path)
	if err != nil {
		return 0, nil, fmt.Errorf("rejects: %w", err)
	}
	defer out.Close()
	bw := bufio.NewWriterSize(out, 256<<10)
	hw := newHashWriter(bw)
	var n int64
	for _, l := range logs {
		if l == nil || l.f == nil {
			continue
		}
		in, err := os.Open(l.f.Name())
		if err != nil {
			return 0, nil, fmt.Errorf("rejects: %w", err)
		}
		_, err = io.Copy(hw, in)
		in.Close()
		if err != nil {
			return 0, nil, fmt.Errorf("rejects: %w", err)
		}
		n += l.n
	}
	if err := bw.Flush(); err != nil {
		return 0, nil, fmt.Errorf("rejects: %w", err)
	}
	return n, hw, out.Close()
}
