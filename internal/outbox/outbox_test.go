package outbox

import (
	"errors"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{{0, 0}, {1, time.Minute}, {2, 2 * time.Minute}, {3, 4 * time.Minute}, {9, 256 * time.Minute}, {10, 6 * time.Hour}, {1000, 6 * time.Hour}} {
		if got := Backoff(tt.n); got != tt.want {
			t.Errorf("Backoff(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

func TestFailedDelivered(t *testing.T) {
	now := time.Date(2026, 4, 4, 0, 0, 0, 0, time.UTC)
	e := Entry{ID: "x", Kind: KindEvent, At: now}
	e = e.Failed(now, errors.New("503")).Failed(now.Add(time.Minute), errors.New("timeout"))
	if e.Attempts != 2 || !e.NextAttempt.Equal(now.Add(3*time.Minute)) || e.LastError != "timeout" || e.Due(now.Add(2*time.Minute)) || !e.Due(now.Add(3*time.Minute)) {
		t.Errorf("after two failures: %+v", e)
	}
	e = e.Delivered(now.Add(time.Hour))
	if e.Attempts != 0 || e.LastError != "" || e.Sent.IsZero() || e.Resends != 0 || e.Due(now.Add(48*time.Hour)) {
		t.Errorf("delivered: %+v", e)
	}
	if e = e.Delivered(now.Add(2 * time.Hour)); e.Resends != 1 {
		t.Errorf("resent: %+v", e)
	}
	if err := (Entry{ID: "a\nb", Kind: KindMail, At: now}).Validate(); err == nil {
		t.Error("control character in id: no error")
	}
}
