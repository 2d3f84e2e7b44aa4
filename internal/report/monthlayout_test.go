package report

import (
	"testing"
	"time"
)

func TestIsMonthIntentKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"manifests/month=2026-01/pending-run1.json", true},
		{MonthIntentKey("2026-01", "abc"), true},
		{"manifests/month=2026-02/pending-run1.json", false},
		{"manifests/month=2026-01/x/pending-run1.json", false},
		{"statements/month=2026-01/pending-run1.json", false},
		{"manifests/month=2026-01/manifest.json", false},
		{"manifests/month=2026-01/pending-run1.csv", false},
		{"manifests/month=2026-010/pending-run1.json", false},
	} {
		if got := IsMonthIntentKey("2026-01", tc.key); got != tc.want {
			t.Errorf("IsMonthIntentKey(2026-01, %q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}

func TestIsIntentKey(t *testing.T) {
	p := Period{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), End: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{IntentKey(p, "run1"), true},
		{MonthIntentKey("2026-01", "run1"), true},
		{ManifestKey(p), false},
		{ManifestPrefix(p) + "x/pending-run1.json", false},
		{ManifestPrefix(p) + "pending-run1.csv", false},
		{"statements/month=2026-01/pending-run1.json", false},
		{"agencies/agency=a/period=p/pending-run1.json", false},
		{"manifests/due/pending-run1.json", false},
		{"manifests/pending-run1.json", false},
		{"pending-run1.json", false},
	} {
		if got := IsIntentKey(tc.key); got != tc.want {
			t.Errorf("IsIntentKey(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
