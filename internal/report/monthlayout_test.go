package report

import "testing"

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
