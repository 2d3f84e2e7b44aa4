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

func TestIsRunMonthIntentKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{MonthIntentKey("2026-01", "run1"), true},
		{MonthIntentPartKey("2026-01", "run1", 1), true},
		{"manifests/month=2026-01/pending-run1-000123.json", true},
		{MonthIntentPartKey("2026-01", "run1", 1234567), false}, // not six digits
		{"manifests/month=2026-01/pending-run1-00012a.json", false},
		{"manifests/month=2026-01/pending-run12.json", false},
		{"manifests/month=2026-01/pending-run12-000001.json", false},
		{"manifests/month=2026-01/pending-run1.csv", false},
		{MonthIntentPartKey("2026-02", "run1", 1), false},
		{"statements/month=2026-01/pending-run1-000001.json", false},
	} {
		if got := IsRunMonthIntentKey("2026-01", "run1", tc.key); got != tc.want {
			t.Errorf("IsRunMonthIntentKey(2026-01, run1, %q) = %v, want %v", tc.key, got, tc.want)
		}
	}
	if k := MonthIntentPartKey("2026-01", "run1", 7); k != "manifests/month=2026-01/pending-run1-000007.json" || !IsMonthIntentKey("2026-01", k) {
		t.Errorf("MonthIntentPartKey = %q", k)
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
