package embedded

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/reportjob/reportjob/internal/checkpoint"
)

// now0 is the report clock of the tests below.
var now0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// A lease left by a session that closed the file without releasing it
// is taken over at once by the next session, long before it expires.
func TestAcquireTakesOverClosedSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	ctx := t.Context()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Acquire(ctx, "job", "run-a", now0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Within the session, the lease holds.
	if _, err := s.Acquire(ctx, "job", "run-b", now0.Add(time.Second), time.Hour); !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Fatalf("Acquire by another owner in the same session: %v, want ErrLeaseHeld", err)
	}
	if err := s.Close(); err != nil { // no Release: as if the run was killed
		t.Fatal(err)
	}

	s = open(t, path, Options{})
	b, err := s.Acquire(ctx, "job", "run-b", now0.Add(time.Second), time.Hour)
	if err != nil {
		t.Fatalf("Acquire after the holder's session closed: %v, want the lease at once", err)
	}
	if b.Owner != "run-b" || b.Token != a.Token+1 || !b.Expires.Equal(now0.Add(time.Second+time.Hour)) {
		t.Errorf("taken-over lease %+v, want run-b, token %d", b, a.Token+1)
	}
	// The dead holder's lease is fenced.
	err = s.Commit(ctx, "job", a, now0.Add(2*time.Second), time.Time{}, now0, checkpoint.Update{})
	if !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("Commit with the taken-over lease: %v, want ErrLeaseLost", err)
	}
	// And the new session's lease holds against a third owner.
	if _, err := s.Acquire(ctx, "job", "run-c", now0.Add(3*time.Second), time.Hour); !errors.Is(err, checkpoint.ErrLeaseHeld) {
		t.Errorf("Acquire by a third owner: %v, want ErrLeaseHeld", err)
	}
}

// TestAcquireTakesOverKilledProcess runs this test binary again as a
// child that acquires the lease and exits at once, without Release or
// Close (as a killed run would); the parent then gets the lease at once.
func TestAcquireTakesOverKilledProcess(t *testing.T) {
	if path := os.Getenv("EMBEDDED_TEST_CHILD_ACQUIRE"); path != "" {
		s, err := Open(path, Options{})
		if err != nil {
			fmt.Println("child open:", err)
			os.Exit(2)
		}
		l, err := s.Acquire(t.Context(), "job", "child", now0, time.Hour)
		if err != nil {
			fmt.Println("child acquire:", err)
			os.Exit(2)
		}
		fmt.Printf("child token=%d\n", l.Token)
		os.Exit(1) // no Release, no Close
	}
	path := filepath.Join(t.TempDir(), "store.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAcquireTakesOverKilledProcess$")
	cmd.Env = append(os.Environ(), "EMBEDDED_TEST_CHILD_ACQUIRE="+path)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child: %v, want exit status 1\n%s", err, out)
	}
	_, tok, ok := strings.Cut(strings.TrimSpace(string(out)), "child token=")
	childToken, err := strconv.ParseInt(strings.Fields(tok + " ")[0], 10, 64)
	if !ok || err != nil {
		t.Fatalf("child output %q: no token", out)
	}

	start := time.Now()
	s := open(t, path, Options{LockTimeout: 5 * time.Second})
	st, err := s.Load(t.Context(), "job")
	if err != nil {
		t.Fatal(err)
	}
	if st.Lease.Owner != "child" || !st.Lease.Held(now0.Add(time.Minute)) {
		t.Fatalf("stored lease %+v, want the child's, unexpired", st.Lease)
	}
	l, err := s.Acquire(t.Context(), "job", "parent", now0.Add(time.Minute), time.Hour)
	if err != nil {
		t.Fatalf("Acquire after the child died: %v, want the lease at once", err)
	}
	if l.Token != childToken+1 {
		t.Errorf("parent token %d, want %d", l.Token, childToken+1)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("reopen and Acquire took %s", d)
	}
}

func putRecord(t *testing.T, s *Store, job, record string) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketJobs)
		if err != nil {
			return err
		}
		return b.Put([]byte(job), []byte(record))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func getRecord(t *testing.T, s *Store, job string) (v []byte) {
	t.Helper()
	err := s.db.View(func(tx *bolt.Tx) error {
		v = append(v, tx.Bucket(bucketJobs).Get([]byte(job))...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A record written by the first version (nanoseconds, no session, no
// rechecks or restatements) is read, taken over and extended.
func TestFirstVersionRecord(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store.db"), Options{})
	ctx := t.Context()
	putRecord(t, s, "job", `{"checkpoint":"2024-03-01T11:00:00.123456789Z","lease_owner":"old-run",`+
		`"lease_token":4,"lease_expires":"2024-03-01T13:00:00Z"}`)
	st, err := s.Load(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	cp := time.Date(2024, 3, 1, 11, 0, 0, 123000000, time.UTC)
	wantLease := checkpoint.Lease{Owner: "old-run", Token: 4, Expires: time.Date(2024, 3, 1, 13, 0, 0, 0, time.UTC)}
	if !st.Checkpoint.Equal(cp) || st.Lease != wantLease || st.Rechecks == nil || len(st.Rechecks) != 0 || len(st.Restated) != 0 {
		t.Fatalf("Load of a first-version record = %+v", st)
	}

	// Its holder belongs to no session of this file: taken over at once.
	l, err := s.Acquire(ctx, "job", "run-a", now0, time.Hour)
	if err != nil || l.Token != 5 {
		t.Fatalf("Acquire over a first-version lease = %+v, %v; want token 5", l, err)
	}
	r := checkpoint.Recheck{Start: now0.Add(-2 * time.Hour), End: now0.Add(-time.Hour), Read: now0}
	rs := checkpoint.Restatement{Start: r.Start, End: r.End, Revision: 2, Reason: "recheck", At: now0,
		ItemsBefore: 3, ItemsAfter: 4}
	if err := s.Commit(ctx, "job", l, now0, cp, now0,
		checkpoint.Update{SetRecheck: &r, Restated: &rs}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(getRecord(t, s, "job"), &got); err != nil {
		t.Fatal(err)
	}
	if got["lease_session"] != s.session {
		t.Errorf("lease_session %v, want %s", got["lease_session"], s.session)
	}
	delete(got, "lease_session")
	b, _ := json.Marshal(got)
	const want = `{"checkpoint":"2024-03-01T12:00:00.000Z","lease_expires":"2024-03-01T13:00:00.000Z",` +
		`"lease_owner":"run-a","lease_token":5,` +
		`"rechecks":[{"end":"2024-03-01T11:00:00.000Z","read":"2024-03-01T12:00:00.000Z","start":"2024-03-01T10:00:00.000Z"}],` +
		`"restated":[{"at":"2024-03-01T12:00:00.000Z","end":"2024-03-01T11:00:00.000Z","items_after":4,"items_before":3,` +
		`"reason":"recheck","revision":2,"start":"2024-03-01T10:00:00.000Z"}]}`
	if string(b) != want {
		t.Errorf("stored record:\n%s\nwant:\n%s", b, want)
	}
}

func TestBadRecordNamesField(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store.db"), Options{})
	putRecord(t, s, "job", `{"checkpoint":"2024-03-01T11:00:00Z","rechecks":[{"start":"yesterday","end":""}]}`)
	_, err := s.Load(t.Context(), "job")
	if err == nil || !strings.Contains(err.Error(), "rechecks.start") || !strings.Contains(err.Error(), `"yesterday"`) {
		t.Errorf("Load of a record with a bad time: %v, want an error naming rechecks.start and the value", err)
	}
}
