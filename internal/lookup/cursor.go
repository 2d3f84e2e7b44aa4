package lookup

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reportjob/reportjob/internal/report"
)

// ErrBadCursor is wrapped by the error of a look-up given a cursor that
// is damaged, of another version, or made by another listing (another
// agency, another command, another --agency filter): a usage error.
var ErrBadCursor = errors.New("bad cursor")

// Cursor is a position in a listing, newest first: the period and, within
// it, the sort key and tie-break of the last row shown. The next page
// starts right after it, reading each period at its latest revision: when
// the cursor's period was restated between two pages, the next page goes
// on with the rows of the new revision that sort after the position (rows
// the restatement added before it are not shown, rows it removed are not
// shown again), and the page says the period was restated. Periods older
// than the cursor are read as they are then; periods newer than it are
// not read again.
//
// On the wire it is base64url (no padding) of a small binary record (a
// version byte, the listing's kind, 6 bytes of the SHA-256 of its scope,
// the period start in milliseconds and the period's revision as varints,
// the sort key and the tie-break each with a varint length) followed by
// the first 8 bytes of the record's SHA-256, so that a damaged cursor is
// refused rather than misread. The scope is the agency listed (or the
// --agency filter of rejects): another agency's listing refuses it. It
// holds no secret: anyone who may list the agency may read it.
type Cursor struct {
	Kind   string    // "transactions" or "rejects"
	Scope  string    // the agency (transactions), the --agency filter (rejects)
	Period time.Time // start of the period of the last row shown
	SK, ID string    // the last row's position within the period
	Rev    int       // its period's revision when the page was read
}

// cursorVersion is the layout of an encoded cursor.
const cursorVersion = 1

const (
	cursorSumLen   = 8
	cursorScopeLen = 6
	maxCursorText  = 4096
)

func scopeHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:cursorScopeLen]
}

var kindBytes = map[string]byte{KindTransactions: 't', KindRejects: 'r'}

// Encode returns the cursor's opaque text.
func (c Cursor) Encode() string {
	b := []byte{cursorVersion, kindBytes[c.Kind]}
	b = append(b, scopeHash(c.Scope)...)
	b = binary.AppendVarint(b, c.Period.UnixMilli())
	b = binary.AppendUvarint(b, uint64(c.Rev))
	for _, s := range []string{c.SK, c.ID} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:cursorSumLen]...))
}

// DecodeCursor reads a cursor made by Encode for a listing of kind and
// scope; the error wraps ErrBadCursor.
func DecodeCursor(s, kind, scope string) (Cursor, error) {
	damaged := fmt.Errorf("%w: not a cursor this tool made, or damaged or cut short: use the next_cursor of a page as it is", ErrBadCursor)
	if len(s) > maxCursorText {
		return Cursor{}, damaged
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 2+cursorScopeLen+cursorSumLen {
		return Cursor{}, damaged
	}
	b, sum := raw[:len(raw)-cursorSumLen], raw[len(raw)-cursorSumLen:]
	if want := sha256.Sum256(b); !bytes.Equal(sum, want[:cursorSumLen]) {
		return Cursor{}, damaged
	}
	if b[0] != cursorVersion {
		return Cursor{}, fmt.Errorf("%w: cursor version %d, this tool reads %d", ErrBadCursor, b[0], cursorVersion)
	}
	if b[1] != kindBytes[kind] {
		return Cursor{}, fmt.Errorf("%w: it continues another listing than %s", ErrBadCursor, kind)
	}
	if !bytes.Equal(b[2:2+cursorScopeLen], scopeHash(scope)) {
		what := "agency"
		if kind == KindRejects {
			what = "--agency filter"
		}
		return Cursor{}, fmt.Errorf("%w: it was made for another %s than %q; start again without --cursor", ErrBadCursor, what, scope)
	}
	c := Cursor{Kind: kind, Scope: scope}
	rest := b[2+cursorScopeLen:]
	ms, n := binary.Varint(rest)
	if n <= 0 {
		return Cursor{}, damaged
	}
	rest = rest[n:]
	rev, n := binary.Uvarint(rest)
	if n <= 0 || rev > 1<<31 {
		return Cursor{}, damaged
	}
	rest = rest[n:]
	var strs [2]string
	for i := range strs {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return Cursor{}, damaged
		}
		strs[i], rest = string(rest[n:n+int(l)]), rest[n+int(l):]
	}
	if len(rest) != 0 {
		return Cursor{}, damaged
	}
	c.Period, c.Rev, c.SK, c.ID = time.UnixMilli(ms).UTC(), int(rev), strs[0], strs[1]
	return c, nil
}

// Listing kinds (Cursor.Kind).
const (
	KindTransactions = "transactions"
	KindRejects      = "rejects"
)

// position is a row's place within its period.
type position struct{ SK, ID string }

// newer orders rows newest first: a sorts before b.
func (a position) newer(b position) bool {
	return a.SK > b.SK || (a.SK == b.SK && a.ID > b.ID)
}

func (a position) compareNewest(b position) int {
	switch {
	case a.newer(b):
		return -1
	case b.newer(a):
		return 1
	}
	return 0
}

// resume returns the periods of q's range newest first, from the period of
// q's cursor on (all of them without one), and the cursor decoded (nil
// without one); kind is the listing the cursor must be of.
func (r *Reader) resume(q Query, kind string) ([]report.Period, *Cursor, error) {
	ps := r.newestFirst(q.From, q.To)
	if q.Cursor == "" {
		return ps, nil, nil
	}
	c, err := DecodeCursor(q.Cursor, kind, q.Agency)
	if err != nil {
		return nil, nil, err
	}
	i, _ := slices.BinarySearchFunc(ps, c.Period, func(p report.Period, t time.Time) int { return t.Compare(p.Start) })
	return ps[i:], &c, nil
}
