package report

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
)

// contentDigestVersion names what ContentDigest covers; it changes only
// with what the digest hashes.
const contentDigestVersion = "reportjob.period-digest/1"

// ContentDigest is the digest of what revision m of a period holds, not
// of when its manifest was written: the SHA-256 of the period's bounds,
// the revision, the items fingerprint (with its version) and every object
// the revision lists (key and SHA-256, sorted by key). Two publications of
// the same items give the same digest whatever their generated_at, tool
// version or manifest layout (parts or not). This is the one place it is
// computed: the statements' audit chain (CSV, PDF) and the month manifest
// name each period revision by it (SPEC section 7).
func ContentDigest(m *Manifest) string {
	files := slices.Clone(m.Files)
	slices.SortFunc(files, func(x, y FileInfo) int { return cmp.Compare(x.Key, y.Key) })
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%d\n%d\n%s\n", contentDigestVersion, m.PeriodStart.UTC().Format(time.RFC3339Nano),
		m.PeriodEnd.UTC().Format(time.RFC3339Nano), m.Revision, m.FingerprintVersion(), m.ItemsFingerprint)
	for _, f := range files {
		fmt.Fprintf(h, "%q %s\n", f.Key, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}
