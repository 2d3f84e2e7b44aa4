package aggregate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/reportjob/reportjob/internal/extsort"
	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/report"
)

// Lines returns the line items in file order. Call it once, after the last
// Add. The caller must Close them.
func (a *Aggregator) Lines() (*Lines, error) {
	if a.lines == nil {
		return nil, errors.New("aggregate: line items were not kept")
	}
	it, err := a.lines.Sort()
	if err != nil {
		return nil, fmt.Errorf("sort line items: %w", err)
	}
	l := &Lines{
		batches: make(chan *lineBatch, linesAhead),
		free:    make(chan *lineBatch, linesAhead+2),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go l.read(it)
	return l, nil
}

// linesBatch is how many line items a batch holds; linesAhead how many
// batches are read ahead of the caller.
const (
	linesBatch = 256
	linesAhead = 2
)

// Lines iterates over line items in file order. A goroutine of its own
// merges the sorted runs and decodes the line items, a few batches ahead
// of the caller (who encodes them), so that both run on their own core.
type Lines struct {
	batches chan *lineBatch
	free    chan *lineBatch
	stop    chan struct{}
	done    chan struct{}
	cur     *lineBatch
	i       int
	err     error
	closed  bool
}

// lineBatch is up to linesBatch line items, in order, and the error that
// ended the reading after them, if any.
type lineBatch struct {
	items []report.LineItem
	err   error
}

// read fills batches from it until the end, an error or Close.
func (l *Lines) read(it *extsort.Iterator) {
	defer close(l.done)
	defer close(l.batches)
	var dec lineDecoder
	for {
		var b *lineBatch
		select {
		case b = <-l.free:
			b.items = b.items[:0]
		default:
			b = &lineBatch{items: make([]report.LineItem, 0, linesBatch)}
		}
		for len(b.items) < linesBatch && it.Next() {
			b.items = append(b.items, report.LineItem{})
			if err := dec.decode(it.Key(), it.Value(), &b.items[len(b.items)-1]); err != nil {
				b.items, b.err = b.items[:len(b.items)-1], err
				break
			}
		}
		if b.err == nil && len(b.items) < linesBatch {
			if err := it.Err(); err != nil {
				b.err = fmt.Errorf("line items: %w", err)
			}
		}
		last := b.err != nil || len(b.items) < linesBatch
		if len(b.items) > 0 || b.err != nil {
			select {
			case l.batches <- b:
			case <-l.stop:
				return
			}
		}
		if last {
			return
		}
	}
}

// lineDecoder decodes line items' sort records, in file order.
type lineDecoder struct {
	// agency and currency are the last line item's: the records come
	// sorted by agency, then currency, so the strings are made once per
	// agency and currency, not per line item.
	agency, currency string
}

// decode decodes a line item's sort record into li. The key is lineKey's;
// the value is the transaction id, the transaction without its keys, its
// agency and its currency code (AppendBinaryBody of the rest), then the
// rate Add priced it at.
func (d *lineDecoder) decode(k, v []byte, li *report.LineItem) error {
	idLen, n := binary.Uvarint(v)
	end := bytes.LastIndexByte(k, 0) // partition keys hold no 0x00
	var parts [2][]byte              // agency and currency, which hold no 0x00
	start := 0
	for p := range parts {
		i := bytes.IndexByte(k[start:], 0)
		if i < 0 {
			start = len(k) + 1 // malformed
			break
		}
		parts[p] = k[start : start+i]
		start += i + 1
	}
	if n <= 0 || uint64(len(v)-n) < idLen+4 || end < start {
		return fmt.Errorf("line items: %w", item.ErrCorruptRecord)
	}
	id := v[n : n+int(idLen)]
	if err := li.Tx.DecodeBinaryBody(k[end+1:], k[start:end], id, v[n+int(idLen):len(v)-4]); err != nil {
		return fmt.Errorf("line items: %w", err)
	}
	if li.Tx.AgencyID != "" || li.Tx.Currency.Code != "" {
		return fmt.Errorf("line items: agency or currency in the value: %w", item.ErrCorruptRecord)
	}
	if string(parts[0]) != d.agency {
		d.agency = string(parts[0])
	}
	if string(parts[1]) != d.currency {
		d.currency = string(parts[1])
	}
	li.Tx.AgencyID, li.Tx.Currency.Code = d.agency, d.currency
	li.BPS = int32(binary.BigEndian.Uint32(v[len(v)-4:]))
	li.Commission = Commission(&li.Tx, li.BPS)
	return nil
}

// Next advances to the next line item.
func (l *Lines) Next() bool {
	if l.err != nil || l.closed {
		return false
	}
	l.i++
	for l.cur == nil || l.i >= len(l.cur.items) {
		if l.cur != nil {
			if l.cur.err != nil {
				l.err = l.cur.err
				return false
			}
			clear(l.cur.items) // drop the transactions' strings
			select {
			case l.free <- l.cur:
			default:
			}
		}
		b, ok := <-l.batches
		if !ok {
			l.cur = nil
			return false
		}
		l.cur, l.i = b, 0
		if len(b.items) == 0 {
			continue // only an error: reported above, at the loop's top
		}
	}
	return true
}

// Item is the current line item, valid until the next Next.
func (l *Lines) Item() *report.LineItem { return &l.cur.items[l.i] }

// Err is the error that ended the iteration, if any.
func (l *Lines) Err() error { return l.err }

// Close stops the reading and waits for its goroutine. It is safe to call
// more than once, and after the last Next.
func (l *Lines) Close() {
	if l.closed {
		return
	}
	l.closed = true
	close(l.stop)
	<-l.done
}
