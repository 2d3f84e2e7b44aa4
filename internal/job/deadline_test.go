package job

import (
	"testing"
	"time"
)

// TestDeadlineBothClocks: the lease's local deadline passes when either
// clock says so. A suspended VM's monotonic clock stands still while its
// wall clock runs on: the wall reading must fence it.
func TestDeadlineBothClocks(t *testing.T) {
	sent := time.Now() // with a monotonic reading
	d := deadlineAt(sent, time.Minute)

	if d.passed(sent.Add(59 * time.Second)) {
		t.Error("passed 1 s before the deadline")
	}
	if !d.passed(sent.Add(time.Minute)) {
		t.Error("not passed at the deadline")
	}

	// After a suspension of 3 min: the monotonic clock advanced 1 s, the
	// wall clock 3 min. Only a wall reading can say so: a time without a
	// monotonic reading is compared by the wall clock alone, so build the
	// deadline's monotonic part ahead and its wall part behind.
	suspended := deadline{mono: sent.Add(time.Minute), wall: sent.Round(0).Add(-2 * time.Minute)}
	if !suspended.passed(sent.Add(time.Second)) {
		t.Error("a deadline passed on the wall clock only is not passed")
	}
	// And the other way round: a wall clock set back must not extend it.
	setBack := deadline{mono: sent.Add(-time.Second), wall: sent.Round(0).Add(time.Hour)}
	if !setBack.passed(sent) {
		t.Error("a deadline passed on the monotonic clock only is not passed")
	}

	// A test clock's times have no monotonic reading: one deadline.
	fake := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	fd := deadlineAt(fake, time.Minute)
	if fd.passed(fake.Add(59*time.Second)) || !fd.passed(fake.Add(time.Minute)) {
		t.Error("test clock deadline wrong")
	}
}
