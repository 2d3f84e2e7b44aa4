package sink_test

import (
	"errors"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/keys"
	"github.com/reportjob/reportjob/internal/report"
	"github.com/reportjob/reportjob/internal/sink"
)

// FuzzCheckKey: a key CheckKey accepts names a place inside the bucket on
// every driver: relative, clean, no "." or ".." segment, no NUL or
// backslash, so joined to a folder (the file sink) or a prefix (S3) it
// stays under it. Everything else is ErrBadKey.
func FuzzCheckKey(f *testing.F) {
	for _, k := range []string{
		"a", "a/b", "../x", "/abs", "a/../../b", "a/./b", "a//b", "a/", ".", "..", "...", "a\x00b", `a\..\b`,
		"%2e%2e/x", "agencies/agency=..%2Fx/period=20240301T0000Z/summary-0123456789abcdef.csv", "C:/x", "~/x", "a b",
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		err := sink.CheckKey(key)
		if err != nil {
			if !errors.Is(err, sink.ErrBadKey) {
				t.Fatalf("CheckKey(%q) = %v, not ErrBadKey", key, err)
			}
			return
		}
		if !filepath.IsLocal(key) || path.Clean(key) != key || strings.ContainsAny(key, "\x00\\: ") {
			t.Fatalf("CheckKey accepts %q, which is not a clean local path", key)
		}
		for _, base := range []string{"/srv/reports", "billing/reports"} {
			joined := path.Join(base, key)
			if !strings.HasPrefix(joined, base+"/") {
				t.Fatalf("key %q joined to %q is %q: outside", key, base, joined)
			}
		}
		if err := sink.CheckPrefix(key); err != nil {
			t.Fatalf("CheckPrefix(%q) = %v for a valid key", key, err)
		}
	})
}

// FuzzAgencyKey: whatever the agency id, its objects' keys are valid keys
// under agencies/agency=A/ with A its escaped id, which reads back to it:
// no id reaches outside its own folder, or into another agency's.
func FuzzAgencyKey(f *testing.F) {
	for _, id := range []string{
		"acme", "..", ".", "../../etc/passwd", "/abs", `a\..\b`, "a\x00b", "%2e%2e", "agency=x/../y", "acme/../acme2",
		"*", "${aws:username}", "日本",
	} {
		f.Add(id)
	}
	p := report.Period{Start: time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), End: time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)}
	f.Fuzz(func(t *testing.T, id string) {
		key := report.AgencyPrefix(id, p) + "summary-0123456789abcdef.csv"
		if err := sink.CheckKey(key); err != nil {
			t.Fatalf("agency %q: key %q: %v", id, key, err)
		}
		segs := strings.Split(key, "/")
		if len(segs) != 4 || segs[0] != report.DirAgencies || segs[2] != "period="+p.Name() {
			t.Fatalf("agency %q: key %q is not agencies/agency=A/period=P/name", id, key)
		}
		esc, ok := report.AgencySegment(key)
		if !ok || segs[1] != "agency="+esc || esc != keys.EscapeAgency(id) {
			t.Fatalf("agency %q: segment %q", id, esc)
		}
		if back, err := url.PathUnescape(esc); err != nil || back != id {
			t.Fatalf("agency %q: folder %q reads back as %q, %v", id, esc, back, err)
		}
	})
}
