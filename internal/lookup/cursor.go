package lookup

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
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
// On the wire it is base64url (no padding) of a small JSON object and the
// first 8 bytes of its SHA-256, so that a damaged cursor is refused rather
// than misread. It names a scope (the command and a hash of the agency, so
// that a cursor is refused by another agency's listing) and the revision
// its period had. It holds no secret: anyone who may list the agency may
// read it.
type Cursor struct {
	Kind   string    // "transactions" or "rejects"
	Scope  string    // the agency (transactions), the --agency filter (rejects)
	Period time.Time // start of the period of the last row shown
	SK, ID string    // the last row's position within the period
	Rev    int       // its period's revision when the page was read
}

// cursorVersion is the layout of an encoded cursor.
const cursorVersion = 1

type cursorWire struct {
	V     int    `json:"v"`
	Kind  string `json:"k"`
	Scope string `json:"a"`
	P     int64  `json:"p"`
	SK    string `json:"s"`
	ID    string `json:"i"`
	Rev   int    `json:"r"`
}

const cursorSumLen = 8

func scopeHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:6])
}

// Encode returns the cursor's opaque text.
func (c Cursor) Encode() string {
	w := cursorWire{V: cursorVersion, Kind: c.Kind, Scope: scopeHash(c.Scope), P: c.Period.UnixMilli(), SK: c.SK, ID: c.ID, Rev: c.Rev}
	b, _ := json.Marshal(w)
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(append(b, sum[:cursorSumLen]...))
}

// DecodeCursor reads a cursor made by Encode for a listing of kind and
// scope; the error wraps ErrBadCursor.
func DecodeCursor(s, kind, scope string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) <= cursorSumLen {
		return Cursor{}, fmt.Errorf("%w: not a cursor this tool made (damaged or cut short?)", ErrBadCursor)
	}
	body, sum := raw[:len(raw)-cursorSumLen], raw[len(raw)-cursorSumLen:]
	if want := sha256.Sum256(body); !bytes.Equal(sum, want[:cursorSumLen]) {
		return Cursor{}, fmt.Errorf("%w: checksum does not match (the cursor was damaged or cut short)", ErrBadCursor)
	}
	var w cursorWire
	if err := json.Unmarshal(body, &w); err != nil {
		return Cursor{}, fmt.Errorf("%w: %v", ErrBadCursor, err)
	}
	switch {
	case w.V != cursorVersion:
		return Cursor{}, fmt.Errorf("%w: version %d, this tool reads %d", ErrBadCursor, w.V, cursorVersion)
	case w.Kind != kind:
		return Cursor{}, fmt.Errorf("%w: it continues a %s listing, not %s", ErrBadCursor, w.Kind, kind)
	case w.Scope != scopeHash(scope):
		what := "agency"
		if kind == KindRejects {
			what = "--agency filter"
		}
		return Cursor{}, fmt.Errorf("%w: it was made for another %s than %q; start again without --cursor", ErrBadCursor, what, scope)
	}
	return Cursor{Kind: w.Kind, Scope: scope, Period: time.UnixMilli(w.P).UTC(), SK: w.SK, ID: w.ID, Rev: w.Rev}, nil
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
