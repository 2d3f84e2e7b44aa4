package report

import (
	"testing"
	"time"
)

func TestContentDigest(t *testing.T) {
	start := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	base := func() *Manifest {
		return &Manifest{Format: ManifestFormat, Job: "j", PeriodStart: start, PeriodEnd: start.Add(24 * time.Hour), Revision: 1,
			GeneratedAt: time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC), ToolVersion: "v1", ItemsFingerprint: "ab",
			ItemsFingerprintVersion: ItemsFingerprint2,
			Files:                   []FileInfo{{Key: "summary/x-1.parquet", SHA256: "11"}, {Key: "agencies/a/x-2.csv", SHA256: "22"}}}
	}
	want := ContentDigest(base())
	same := base()
	same.GeneratedAt, same.ToolVersion, same.Reason = time.Now(), "v2", ReasonBackfill
	same.Files[0], same.Files[1] = same.Files[1], same.Files[0]
	if got := ContentDigest(same); got != want {
		t.Errorf("another generated_at, tool version, reason and file order: digest %s, want %s", got, want)
	}
	for name, change := range map[string]func(m *Manifest){
		"revision":    func(m *Manifest) { m.Revision = 2 },
		"fingerprint": func(m *Manifest) { m.ItemsFingerprint = "ac" },
		"fp version":  func(m *Manifest) { m.ItemsFingerprintVersion = ItemsFingerprint1 },
		"object":      func(m *Manifest) { m.Files[0].SHA256 = "12" },
		"key":         func(m *Manifest) { m.Files[0].Key = "summary/x-3.parquet" },
		"no object":   func(m *Manifest) { m.Files = m.Files[:1] },
		"period":      func(m *Manifest) { m.PeriodEnd = start.Add(time.Hour) },
	} {
		m := base()
		change(m)
		if ContentDigest(m) == want {
			t.Errorf("%s changed: same digest", name)
		}
	}
}
