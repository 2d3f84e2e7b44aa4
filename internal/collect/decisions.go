package collect

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// DecisionBilled is the decision Previous gives for a transaction the
// period's current revision billed (its line items list it). Dropped and
// rejected copies are SightingDropped and SightingRejected.
const DecisionBilled = "billed"

// CrossPeriod is one line of a period's duplicates file (report's
// duplicates dataset): a transaction of the period that was not billed
// because another period billed it, and what was decided about it. The
// file lists them in ascending transaction id order, one line an id. It is
// the delivered record of those decisions, which a rebuild of the period
// keeps (Previous): the dedupe index, which made them, keeps its claims for
// a while only (ClaimRetention).
type CrossPeriod struct {
	TransactionID string `json:"transaction_id"`
	// Fingerprint is the copy's content fingerprint (FPLen bytes, hex):
	// a copy whose content changed since is a new item, looked up again.
	Fingerprint string `json:"fingerprint"`
	// Decision is SightingDropped (an identical copy of what BilledBy
	// billed) or SightingRejected (different content).
	Decision string `json:"decision"`
	// BilledBy is the period that billed the transaction (report.Period
	// Name: YYYYMMDDTHHMMZ).
	BilledBy string `json:"billed_by"`
	// PartitionKey and SortKey are the keys of the copy decided (the one
	// with the smallest keys when the period holds identical copies).
	PartitionKey string `json:"partition_key"`
	SortKey      string `json:"sort_key"`
}

// periodNameLayout is how BilledBy and the rejects' reasons name a period.
const periodNameLayout = "20060102T1504Z"

// Decision is what a period's current revision decided about one
// transaction (Previous): Kind "" when it decided nothing (the
// transaction is new to the period, or the revision does not say).
type Decision struct {
	// Kind is DecisionBilled, SightingDropped, SightingRejected or "".
	Kind string
	// BilledBy is the start of the period that billed the transaction,
	// for SightingDropped and SightingRejected.
	BilledBy time.Time
}

// Previous is what the current revision of the period being rebuilt
// decided about its transactions (SPEC section 3, "What a rebuild keeps"):
// Dedupe keeps every decision it gives, and looks up in the index only the
// transactions it gives none for. Dedupe asks for each transaction once,
// in ascending id order.
type Previous interface {
	Decision(id string, fp [FPLen]byte) (Decision, error)
}

// ErrDuplicatesFile means a period's duplicates file cannot be read back:
// a line that is not a CrossPeriod, or lines out of transaction id order.
var ErrDuplicatesFile = errors.New("duplicates file is malformed")

// PreviousRevision is the Previous of a delivered revision: the decisions
// of its duplicates file, read as Dedupe goes (the file is in id order: a
// merge, in constant memory), and, for the other transactions, billed
// (nil when the revision's line items cannot tell).
type PreviousRevision struct {
	dec    *json.Decoder // nil once the file is read whole (or none)
	billed func(id string) (bool, error)
	// next is the file's line not passed yet, when loaded; last is the id
	// of the last line read.
	next   CrossPeriod
	nextFP [FPLen]byte
	loaded bool
	last   string
	err    error
}

// NewPreviousRevision returns the decisions of the duplicates file r (nil:
// the revision has none) and of billed, which reports whether the revision
// billed an id (asked in ascending id order; nil when unknown).
func NewPreviousRevision(r io.Reader, billed func(id string) (bool, error)) *PreviousRevision {
	p := &PreviousRevision{billed: billed}
	if r != nil {
		p.dec = json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
		p.dec.DisallowUnknownFields()
	}
	return p
}

// Decision implements Previous.
func (p *PreviousRevision) Decision(id string, fp [FPLen]byte) (Decision, error) {
	for {
		if err := p.peek(); err != nil {
			return Decision{}, err
		}
		if !p.loaded || p.next.TransactionID >= id {
			break
		}
		p.loaded = false // a transaction no longer in the period
	}
	if p.loaded && p.next.TransactionID == id && p.nextFP == fp {
		at, _ := time.Parse(periodNameLayout, p.next.BilledBy) // checked by peek
		return Decision{Kind: p.next.Decision, BilledBy: at}, nil
	}
	if p.billed != nil {
		ok, err := p.billed(id)
		if err != nil {
			return Decision{}, err
		}
		if ok {
			return Decision{Kind: DecisionBilled}, nil
		}
	}
	return Decision{}, nil
}

// Finish reads what is left of the file, so that a malformed end is not
// missed; call it once Dedupe is done.
func (p *PreviousRevision) Finish() error {
	for {
		if err := p.peek(); err != nil || !p.loaded {
			return err
		}
		p.loaded = false
	}
}

// peek loads the file's next line into p.next unless one is loaded.
func (p *PreviousRevision) peek() error {
	if p.err != nil || p.loaded || p.dec == nil {
		return p.err
	}
	var cp CrossPeriod
	err := p.dec.Decode(&cp)
	if err == io.EOF {
		p.dec = nil
		return nil
	}
	if err == nil {
		err = checkCrossPeriod(&cp, &p.nextFP)
	}
	if err == nil && cp.TransactionID <= p.last {
		err = fmt.Errorf("%w: transaction id %q after %q", ErrDuplicatesFile, cp.TransactionID, p.last)
	}
	if err != nil {
		if !errors.Is(err, ErrDuplicatesFile) {
			err = fmt.Errorf("%w: %w", ErrDuplicatesFile, err)
		}
		p.err = err
		return err
	}
	p.next, p.loaded, p.last = cp, true, cp.TransactionID
	return nil
}

// checkCrossPeriod checks a line of the duplicates file and decodes its
// fingerprint into fp.
func checkCrossPeriod(cp *CrossPeriod, fp *[FPLen]byte) error {
	b, err := hex.DecodeString(cp.Fingerprint)
	if err != nil || len(b) != FPLen {
		return fmt.Errorf("%w: transaction %q: fingerprint %q, want %d hex bytes", ErrDuplicatesFile, cp.TransactionID, cp.Fingerprint, FPLen)
	}
	copy(fp[:], b)
	if cp.Decision != SightingDropped && cp.Decision != SightingRejected {
		return fmt.Errorf("%w: transaction %q: decision %q", ErrDuplicatesFile, cp.TransactionID, cp.Decision)
	}
	if _, err := time.Parse(periodNameLayout, cp.BilledBy); err != nil {
		return fmt.Errorf("%w: transaction %q: billed_by %q", ErrDuplicatesFile, cp.TransactionID, cp.BilledBy)
	}
	if CheckID(cp.TransactionID) != nil {
		return fmt.Errorf("%w: transaction id %q", ErrDuplicatesFile, cp.TransactionID)
	}
	return nil
}

// crossPeriodLog writes the duplicates file as Dedupe decides, in id
// order, created with its first line.
type crossPeriodLog struct {
	path string
	f    *os.File
	w    *bufio.Writer
	enc  *json.Encoder
	n    int64
}

func newCrossPeriodLog(dir string) *crossPeriodLog {
	return &crossPeriodLog{path: filepath.Join(dir, "duplicates.jsonl")}
}

// add writes the decision about the candidate cand, a copy of what the
// period starting at billedBy billed.
func (l *crossPeriodLog) add(cand *candidate, decision string, billedBy time.Time) error {
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("duplicates: %w", err)
		}
		l.f, l.w = f, bufio.NewWriterSize(f, 64<<10)
		l.enc = json.NewEncoder(l.w)
		l.enc.SetEscapeHTML(false)
	}
	l.n++
	cp := CrossPeriod{
		TransactionID: cand.tx.ID, Fingerprint: hex.EncodeToString(cand.fp[:]), Decision: decision,
		BilledBy: billedBy.UTC().Format(periodNameLayout), PartitionKey: cand.tx.PK, SortKey: cand.tx.SK,
	}
	if err := l.enc.Encode(&cp); err != nil {
		return fmt.Errorf("duplicates: %w", err)
	}
	return nil
}

// finish flushes and closes the file; it returns its path and number of
// lines ("" and 0 when there are none). Safe to call more than once.
func (l *crossPeriodLog) finish() (string, int64, error) {
	if l == nil || l.f == nil {
		return "", 0, nil
	}
	if l.w != nil {
		err := l.w.Flush()
		l.w = nil
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", 0, fmt.Errorf("duplicates: %w", err)
		}
	}
	return l.path, l.n, nil
}
