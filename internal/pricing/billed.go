package pricing

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/reportjob/reportjob/internal/extsort"
	"github.com/reportjob/reportjob/internal/item"
)

// ErrOrder means a Pricer with billed rates was asked for transactions
// out of ascending transaction id order.
var ErrOrder = errors.New("pricing: transactions out of transaction id order")

// Billed is the rates a period's published revision billed its
// transactions at (its line items' transaction_id and commission_bps).
// Add takes them in any order; they are sorted by transaction id on disk
// (an external sort within the memory budget), so that Billed stays small
// whatever the period's size, and a Pricer merges them with the
// transactions being priced, which come in ascending id order.
type Billed struct {
	sorter *extsort.Sorter
	val    [4]byte
	n      int64

	// The merge: it is the sorted rates once the first lookup started
	// it; id and bps are the smallest rate not passed yet (more false
	// when none is left); last is the id looked up last.
	it      *extsort.Iterator
	started bool
	more    bool
	id      []byte
	bps     int32
	last    []byte
}

// NewBilled returns an empty Billed that spills to dir within memBytes
// (0: extsort's default).
func NewBilled(dir string, memBytes int) *Billed {
	return &Billed{sorter: extsort.New(extsort.Options{Dir: dir, MemBytes: memBytes})}
}

// Add records that the transaction id was billed at bps. Call it before
// the Billed is used by a Pricer.
func (b *Billed) Add(id []byte, bps int32) error {
	binary.BigEndian.PutUint32(b.val[:], uint32(bps))
	if err := b.sorter.Add(id, b.val[:]); err != nil {
		return fmt.Errorf("sort billed rates: %w", err)
	}
	b.n++
	return nil
}

// Len is the number of rates added.
func (b *Billed) Len() int64 { return b.n }

// Close releases the sort's memory and files.
func (b *Billed) Close() error { return b.sorter.Close() }

// lookup returns the rate transaction id was billed at, ok false when the
// revision did not bill it. ids must be asked in ascending order (equal
// ones allowed): the rates are merged, never searched.
func (b *Billed) lookup(id string) (bps int32, ok bool, err error) {
	if !b.started {
		b.started = true
		if b.it, err = b.sorter.Sort(); err != nil {
			return 0, false, fmt.Errorf("sort billed rates: %w", err)
		}
		if err := b.advance(); err != nil {
			return 0, false, err
		}
	} else if id < string(b.last) {
		return 0, false, fmt.Errorf("%w: %q after %q", ErrOrder, id, b.last)
	}
	b.last = append(b.last[:0], id...)
	for b.more && string(b.id) < id {
		if err := b.advance(); err != nil {
			return 0, false, err
		}
	}
	if b.more && string(b.id) == id {
		return b.bps, true, nil
	}
	return 0, false, nil
}

// advance moves the merge to the next rate.
func (b *Billed) advance() error {
	if b.more = b.it.Next(); !b.more {
		if err := b.it.Err(); err != nil {
			return fmt.Errorf("billed rates: %w", err)
		}
		return nil
	}
	v := b.it.Value()
	if len(v) != len(b.val) {
		return fmt.Errorf("billed rates: record of %d bytes: %w", len(v), extsort.ErrCorrupt)
	}
	b.id, b.bps = b.it.Key(), int32(binary.BigEndian.Uint32(v))
	return nil
}

// finish reads the rates the merge did not reach, so that a sort error
// that shows only at the end (a cut run file) is not missed.
func (b *Billed) finish() error {
	if !b.started {
		return nil
	}
	for b.more {
		if err := b.advance(); err != nil {
			return err
		}
	}
	return nil
}

// Pricer prices the transactions of one build of a period: it applies
// the package's rule, and is the only code that does (aggregate calls Of
// once per transaction and keeps the result for its line item). See
// ForPeriod.
type Pricer struct {
	table  Table
	billed *Billed
}

// Pricer returns a Pricer that prices every transaction with t (a period
// billed for the first time, or re-priced on purpose).
func (t Table) Pricer() *Pricer { return &Pricer{table: t} }

// Of returns the rate tx is billed at: its own commission_bps; else the
// rate the published revision billed it at, when it did; else the
// table's (Table.Of). With billed rates, transactions must come in
// ascending transaction id order (collect's Dedupe emits them so): out of
// order is ErrOrder, never a wrong price.
func (p *Pricer) Of(tx *item.Transaction) (int32, error) {
	if tx.HasBPS {
		return tx.BPS, nil
	}
	if p.billed != nil {
		bps, ok, err := p.billed.lookup(tx.ID)
		if err != nil {
			return 0, err
		}
		if ok {
			return bps, nil
		}
	}
	return p.table.Of(tx), nil
}

// Billed returns a function that reports whether the published revision
// billed a transaction id (by its line items), nil when the Pricer has no
// billed rates. It shares Of's merge: ids are asked in ascending order,
// Of's and its own together (Of may ask again for the id asked last).
func (p *Pricer) Billed() func(id string) (bool, error) {
	if p.billed == nil {
		return nil
	}
	return func(id string) (bool, error) {
		_, ok, err := p.billed.lookup(id)
		return ok, err
	}
}

// Table is the table the Pricer prices the transactions it has no billed
// rate for with: the one the new revision's manifest records.
func (p *Pricer) Table() Table { return p.table }

// Finish checks that the billed rates were read whole; call it after the
// last Of.
func (p *Pricer) Finish() error {
	if p.billed == nil {
		return nil
	}
	return p.billed.finish()
}

// Close releases the billed rates' sort, if any.
func (p *Pricer) Close() error {
	if p.billed == nil {
		return nil
	}
	return p.billed.Close()
}
