package ingest

import (
	"errors"
	"testing"
	"time"
)

// TestReadJSONLWindowEdges: a record exactly report.lateness old is
// written, one a millisecond older is late; one exactly MaxFutureSkew
// ahead is written, one a millisecond further is refused.
func TestReadJSONLWindowEdges(t *testing.T) {
	for _, tt := range []struct {
		at   time.Time
		late bool // refused as late (ErrLate)
		bad  bool // refused as in the future
	}{
		{at: testNow.Add(-testOpts.Lateness)},
		{at: testNow.Add(-testOpts.Lateness - time.Millisecond), late: true},
		{at: testNow.Add(MaxFutureSkew)},
		{at: testNow.Add(MaxFutureSkew + time.Millisecond), bad: true},
	} {
		line := jsonLine("recorded_at", `"`+tt.at.Format(time.RFC3339Nano)+`"`)
		_, le := ingestOne(t, line, testOpts)
		switch {
		case tt.late && (le == nil || !errors.Is(le, ErrLate)):
			t.Errorf("recorded_at %s: %v, want late", tt.at.Format(time.RFC3339Nano), le)
		case tt.bad && (le == nil || errors.Is(le, ErrLate)):
			t.Errorf("recorded_at %s: %v, want refused as in the future", tt.at.Format(time.RFC3339Nano), le)
		case !tt.late && !tt.bad && le != nil:
			t.Errorf("recorded_at %s: %v, want written", tt.at.Format(time.RFC3339Nano), le)
		}
	}
}
