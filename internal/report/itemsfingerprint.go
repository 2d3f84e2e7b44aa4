package report

import "fmt"

// ItemsFingerprint numbers the ways a period's items fingerprint
// (Manifest.ItemsFingerprint, collect.Fingerprint) hashes each item. Both
// are the sum, modulo 2^256, of one SHA-256 per item read; they differ in
// what an item's hash covers. A period's manifest records the version its
// fingerprint was computed with, and every later read of the period for a
// recheck, a backfill or verify computes that version again
// (FingerprintFor): a fingerprint is only ever compared with one of its own
// version.
type ItemsFingerprint int

const (
	// ItemsFingerprint1 hashes every item's keys and contract attributes
	// as stored: types and exact text. Every period delivered before
	// versions were recorded (a manifest without
	// items_fingerprint_version) has it.
	ItemsFingerprint1 ItemsFingerprint = 1
	// ItemsFingerprint2 hashes a valid item's keys, recorded time and
	// content fingerprint (the SHA-256 the dedupe compares copies by,
	// computed once for both): everything its reports are made of, and
	// nothing else, so a rewrite that changes no report (an amount written
	// "1.50" instead of "1.5") is no change. A rejected item (it does not
	// validate, or the sink cannot store its agency's objects), which the
	// rejects file shows as read, is hashed as in version 1. About a third of version 1's
	// hashing (PERFORMANCE.md, Throughput (issue 19)).
	ItemsFingerprint2 ItemsFingerprint = 2
	// LatestItemsFingerprint is the version of a period read for its
	// first delivery.
	LatestItemsFingerprint = ItemsFingerprint2
)

// Valid reports whether v is a version this tool computes.
func (v ItemsFingerprint) Valid() bool {
	return v >= ItemsFingerprint1 && v <= LatestItemsFingerprint
}

// FingerprintVersion returns the version of m's items fingerprint: 1 when
// m does not record one (written before versions were recorded).
func (m *Manifest) FingerprintVersion() ItemsFingerprint {
	if m.ItemsFingerprintVersion == 0 {
		return ItemsFingerprint1
	}
	return m.ItemsFingerprintVersion
}

// FingerprintFor returns the fingerprint version to read a period with,
// cur being its current (published) manifest, nil if it has none. This is
// the one place that decides it: a period never delivered gets
// LatestItemsFingerprint; a delivered one keeps its current revision's, in
// every later revision too.
func FingerprintFor(cur *Manifest) ItemsFingerprint {
	if cur == nil {
		return LatestItemsFingerprint
	}
	return cur.FingerprintVersion()
}

// checkFingerprintVersion is ParseManifest's check of
// items_fingerprint_version: absent, or one this tool computes (a
// fingerprint of a newer version could never be matched: every recheck
// would restate the period).
func (m *Manifest) checkFingerprintVersion() error {
	if m.ItemsFingerprintVersion == 0 || m.ItemsFingerprintVersion.Valid() {
		return nil
	}
	return fmt.Errorf("items_fingerprint_version %d, this tool computes %d to %d (written by a newer reportjob?)",
		m.ItemsFingerprintVersion, ItemsFingerprint1, LatestItemsFingerprint)
}
