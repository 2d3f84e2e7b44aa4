package report

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/item"
	"github.com/reportjob/reportjob/internal/money"
)

// sorter orders a period's transactions by (agency, currency, sort key,
// partition key) without holding the period in memory: it keeps at most
// runSize transactions, spills each full run sorted to a temp file, and
// merges the runs when read. A period that fits in one run never touches
// the disk.
type sorter struct {
	dir     string
	runSize int
	buf     []item.Transaction
	runs    []string
}

func newSorter(dir string, runSize int) *sorter {
	return &sorter{dir: dir, runSize: runSize}
}

func compareTx(a, b *item.Transaction) int {
	return cmp.Or(
		cmp.Compare(a.AgencyID, b.AgencyID),
		cmp.Compare(a.Currency.Code, b.Currency.Code),
		cmp.Compare(a.SK, b.SK),
		cmp.Compare(a.PK, b.PK),
	)
}

func (s *sorter) add(t item.Transaction) error {
	s.buf = append(s.buf, t)
	if len(s.buf) >= s.runSize {
		return s.spill()
	}
	return nil
}

func (s *sorter) sortBuf() {
	slices.SortFunc(s.buf, func(a, b item.Transaction) int { return compareTx(&a, &b) })
}

func (s *sorter) spill() error {
	s.sortBuf()
	f, err := os.CreateTemp(s.dir, "run-*.bin")
	if err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	var rec []byte
	for i := range s.buf {
		rec = encodeTx(rec[:0], &s.buf[i])
		if _, err := w.Write(rec); err != nil {
			f.Close()
			return fmt.Errorf("spill: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("spill: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("spill: %w", err)
	}
	clear(s.buf)
	s.buf = s.buf[:0]
	return nil
}

// each calls fn with every transaction added, in order.
func (s *sorter) each(fn func(*item.Transaction) error) error {
	if len(s.runs) == 0 {
		s.sortBuf()
		for i := range s.buf {
			if err := fn(&s.buf[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	h := make(runHeap, 0, len(s.runs))
	defer func() {
		for _, r := range h {
			r.f.Close()
		}
	}()
	for _, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		r := &runReader{f: f, r: bufio.NewReaderSize(f, 256<<10)}
		ok, err := r.next()
		if err != nil {
			f.Close()
			return err
		}
		if !ok {
			f.Close()
			continue
		}
		h = append(h, r)
	}
	heap.Init(&h)
	for h.Len() > 0 {
		r := h[0]
		if err := fn(&r.cur); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			r.f.Close()
			heap.Pop(&h)
		}
	}
	return nil
}

// close removes the spill files.
func (s *sorter) close() {
	for _, name := range s.runs {
		os.Remove(name)
	}
	s.runs = nil
	s.buf = nil
}

type runReader struct {
	f   *os.File
	r   *bufio.Reader
	cur item.Transaction
}

func (r *runReader) next() (bool, error) {
	err := decodeTx(r.r, &r.cur)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("merge %s: %w", r.f.Name(), err)
	}
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return compareTx(&h[i].cur, &h[j].cur) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// encodeTx appends t as a length-prefixed record.
func encodeTx(dst []byte, t *item.Transaction) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // record length, filled below
	for _, s := range [...]string{t.PK, t.SK, t.ID, t.AgencyID, t.CustomerID, t.ProductID, string(t.Kind), t.Currency.Code} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendVarint(dst, int64(t.Currency.Digits))
	dst = binary.AppendVarint(dst, t.Amount)
	dst = binary.AppendVarint(dst, int64(t.BPS))
	hasBPS := byte(0)
	if t.HasBPS {
		hasBPS = 1
	}
	dst = append(dst, hasBPS)
	// Seconds and nanoseconds apart: UnixNano only covers 1678..2262.
	dst = binary.AppendVarint(dst, t.RecordedAt.Unix())
	dst = binary.AppendVarint(dst, int64(t.RecordedAt.Nanosecond()))
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

func decodeTx(r *bufio.Reader, t *item.Transaction) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err // io.EOF at a record boundary ends the run
	}
	rec := make([]byte, binary.LittleEndian.Uint32(n[:]))
	if _, err := io.ReadFull(r, rec); err != nil {
		return fmt.Errorf("truncated record: %w", err)
	}
	d := decoder{b: rec}
	var strs [8]string
	for i := range strs {
		strs[i] = d.str()
	}
	*t = item.Transaction{
		PK: strs[0], SK: strs[1], ID: strs[2], AgencyID: strs[3], CustomerID: strs[4], ProductID: strs[5],
		Kind:     item.Kind(strs[6]),
		Currency: money.Currency{Code: strs[7], Digits: int(d.varint())},
		Amount:   d.varint(),
		BPS:      int32(d.varint()),
	}
	t.HasBPS = d.byte() == 1
	sec := d.varint()
	t.RecordedAt = time.Unix(sec, d.varint()).UTC()
	return d.err
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.New("corrupt spill record")
	}
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if uint64(len(d.b)) < n {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}
