package monthclose_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/filesink"
	"github.com/reportjob/reportjob/internal/monthclose"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

// recorder is a folder sink that records the keys put, in order, and the
// intents' bodies, and can refuse the put of one statement file.
type recorder struct {
	driver.Bucket
	mu      sync.Mutex
	puts    []string
	bodies  map[string][]byte // the intents put
	failNth int               // the Put of the n-th statement file fails (0: none)
	seen    int
}

var errRefused = errors.New("refused by the test")

func (r *recorder) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts driver.PutOptions) (driver.Attrs, error) {
	r.mu.Lock()
	if strings.HasPrefix(key, "agencies/") && strings.Contains(key, "/month=") {
		if r.seen++; r.seen == r.failNth {
			r.mu.Unlock()
			return driver.Attrs{}, errRefused
		}
	}
	r.puts = append(r.puts, key)
	r.mu.Unlock()
	if report.IsIntentKey(key) {
		b, err := io.ReadAll(body)
		if err != nil {
			return driver.Attrs{}, err
		}
		r.mu.Lock()
		r.bodies[key] = b
		r.mu.Unlock()
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return driver.Attrs{}, err
		}
	}
	return r.Bucket.Put(ctx, key, body, size, opts)
}

func recordingFixture(t *testing.T) (*fixture, *recorder) {
	t.Helper()
	f := newFixture(t)
	fs, err := filesink.New(filepath.Join(t.TempDir(), "reports"))
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{Bucket: fs, bodies: map[string][]byte{}}
	f.pb.Bucket = sink.New(r)
	f.b = f.pb.Bucket
	return f, r
}

func agencies(n int, commission int64) map[string]int64 {
	m := map[string]int64{}
	for i := range n {
		m[fmt.Sprintf("agency-%02d", i)] = commission + int64(i)
	}
	return m
}

// A month's agency files are uploaded in parts, each after the intent
// part that names it; the publication's cleanup deletes every part.
func TestAgencyFilesAfterTheirIntentPart(t *testing.T) {
	defer monthclose.SetAgencyPartLimits(3, 1<<20)()
	f, r := recordingFixture(t)
	f.publish(hour(0), report.ReasonDelivery, agencies(8, 100))
	f.mustUpdate(hour(1).Start, "")

	named := map[string]bool{}
	parts := 0
	for _, k := range r.puts {
		switch {
		case report.IsMonthIntentKey("2026-01", k) && k != report.MonthIntentKey("2026-01", "test"):
			parts++
			var in struct{ Keys []string }
			if err := json.Unmarshal(r.bodies[k], &in); err != nil {
				t.Fatal(err)
			}
			if len(in.Keys) > 3 {
				t.Errorf("intent part %s names %d keys, want at most 3", k, len(in.Keys))
			}
			for _, n := range in.Keys {
				named[n] = true
			}
		case strings.HasPrefix(k, "agencies/"):
			if !named[k] {
				t.Errorf("%s was put before an intent named it", k)
			}
		}
	}
	if parts != 3 {
		t.Errorf("%d intent parts, want 3 (8 agency files, 3 a part)", parts)
	}
	if got := f.keys(report.MonthManifestPrefix("2026-01")); slices.ContainsFunc(got, func(k string) bool { return report.IsMonthIntentKey("2026-01", k) }) {
		t.Errorf("intents left after the publication: %v", got)
	}
	st := f.statement("2026-01")
	if n := len(f.keys("agencies/")); n != 8 {
		t.Errorf("%d agency files in the sink, want 8", n)
	}
	if len(st.Manifest.Agencies) != 8 {
		t.Errorf("the manifest lists %d agencies, want 8", len(st.Manifest.Agencies))
	}
}

// A publication whose upload of an agency file fails deletes what it
// uploaded and its intent parts; the next close publishes the month.
func TestFailedAgencyUploadLeavesNothing(t *testing.T) {
	defer monthclose.SetAgencyPartLimits(3, 1<<20)()
	f, r := recordingFixture(t)
	f.publish(hour(0), report.ReasonDelivery, agencies(8, 100))
	before := f.keys("")
	r.failNth = 5
	if _, err := f.update(hour(1).Start, ""); !errors.Is(err, errRefused) {
		t.Fatalf("update: %v, want the refused put; puts %v", err, r.puts)
	}
	if got := f.keys(""); strings.Join(got, "\n") != strings.Join(before, "\n") {
		t.Errorf("after the failed publication the sink holds\n%s\nwant what it held before\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	f.mustUpdate(hour(1).Start, "")
	if n := len(f.keys("agencies/")); n != 8 {
		t.Errorf("%d agency files in the sink after the next close, want 8", n)
	}
	if got := f.keys(report.MonthManifestPrefix("2026-01")); slices.ContainsFunc(got, func(k string) bool { return report.IsMonthIntentKey("2026-01", k) }) {
		t.Errorf("intents left: %v", got)
	}
}
