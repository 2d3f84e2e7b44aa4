package collect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/reportjob/reportjob/internal/item"
)

// Reject is one line of a period's rejects file: an item that cannot be
// billed, with its keys, the reason, and the item as read.
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
// log is written by one goroutine at a time. close must be called, whatever
// happened: it closes the file (the folder holding it is removed with the
// period's scratch folder).
type rejectLog struct {
	dir string
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	n   int64
	// ids are the valid transaction ids of the items rejected (at most
	// maxSightedIDs), for the index's sightings.
	ids []string
}

// maxSightedIDs bounds the ids of rejected items one partition's log keeps
// for the sightings: a period of bad data costs no more memory than this.
const maxSightedIDs = 10_000

// sightID keeps the transaction id of a rejected item when it has a valid
// one.
func (l *rejectLog) sightID(it *item.Item) {
	v, ok := it.Attrs[item.AttrTransactionID]
	if ok && v.Type == item.String && CheckID(v.Text) == nil && len(l.ids) < maxSightedIDs {
		// A copy: the item's strings may share memory with its page's
		// (RecordSource), which the id would keep alive.
		l.ids = append(l.ids, strings.Clone(v.Text))
	}
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

// finish flushes and closes the log; its file can then be copied. It is
// safe to call more than once.
func (l *rejectLog) finish() error {
	if l == nil || l.f == nil || l.w == nil {
		return nil
	}
	err := l.w.Flush()
	l.w = nil
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rejects: %w", err)
	}
	return nil
}

// joinRejects writes the logs, in order, as one file at path and returns
// the number of rejects. Each partition's log is in sort key order (Query's
// order), the logs are in the period's partition order, then the conflicts
// in transaction id order: the file is deterministic without sorting.
func joinRejects(path string, logs []*rejectLog) (int64, error) {
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("rejects: %w", err)
	}
	defer out.Close()
	bw := bufio.NewWriterSize(out, 256<<10)
	var n int64
	for _, l := range logs {
		if l == nil || l.f == nil {
			continue
		}
		if err := l.finish(); err != nil {
			return 0, err
		}
		in, err := os.Open(l.f.Name())
		if err != nil {
			return 0, fmt.Errorf("rejects: %w", err)
		}
		_, err = io.Copy(bw, in)
		in.Close()
		if err != nil {
			return 0, fmt.Errorf("rejects: %w", err)
		}
		n += l.n
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("rejects: %w", err)
	}
	if err := out.Close(); err != nil {
		return 0, fmt.Errorf("rejects: %w", err)
	}
	return n, nil
}
