package collect_test

import (
	"context"
	"testing"

	"github.com/reportjob/reportjob/internal/collect"
	"github.com/reportjob/reportjob/internal/item"
)

// TestAgencyProblemRejectFingerprint (review6): an item that validates but
// becomes a reject because its agency's objects cannot be stored is written
// to the rejects file as read (its attributes' exact text). A rewrite of it
// that changes that text (amount "19.990" for "19.99", recorded_at with an
// offset) changes the rejects file a fresh build publishes, so it must
// change the period's fingerprint, or a recheck and verify miss it. Version
// 1 sees it; version 2 hashes the item as a transaction and does not.
func TestAgencyProblemRejectFingerprint(t *testing.T) {
	for _, v := range []struct {
		name string
		fp   int
	}{{"v1", 1}, {"v2", 2}} {
		t.Run(v.name, func(t *testing.T) {
			read := func(rewrite bool) string {
				s := openStore(t)
				it := tx("t-2", "too-long", 1999, p10.Start)
				if rewrite {
					it.Attrs[item.AttrAmount] = item.N("19.990")
				}
				put(t, s, tx("t-1", "ok", 100, p10.Start), it)
				cfg := collect.Config{Dir: t.TempDir(), AgencyProblem: func(a string) string {
					if a == "too-long" {
						return "its report objects cannot be stored"
					}
					return ""
				}}
				cfg.Fingerprint = 1
				if v.fp == 2 {
					cfg.Fingerprint = 2
				}
				c, err := collect.Read(context.Background(), cfg, s, p10)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				return c.Fingerprint.String()
			}
			if a, b := read(false), read(true); a == b {
				t.Errorf("the rejected item's amount rewritten 19.99 -> 19.990 (its rejects line changes): fingerprint unchanged %s", a)
			}
		})
	}
}
