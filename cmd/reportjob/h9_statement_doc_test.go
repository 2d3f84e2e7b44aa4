//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/testenv"
)

// Regression tests from the adversarial review of issue 32 (helper h9),
// through the built binary. Each names what SPEC section 7 or
// docs/statements.md promises.

// TestH9PageOneKeepsEveryAmountDue: page 1 says "the amount due per
// currency in words that say who pays whom, payment instructions" (SPEC
// section 7). With twelve currencies and 45 short lines of payment
// instructions (1,100 characters, under the 2,000 allowed), every sentence
// and the number to quote must be on a page, not drawn past its bottom.
func TestH9PageOneKeepsEveryAmountDue(t *testing.T) {
	pdftotext := testenv.RequireTool(t, "pdftotext", "page 1's text read back")
	var instr strings.Builder
	for i := range 45 {
		fmt.Fprintf(&instr, "      Line %d: bank transfer.\n", i+1)
	}
	h := newHarness(t, harnessOptions{period: "24h", start: "2026-03-01",
		top: "statements:\n  timezone: UTC\n  agency_files: [pdf, csv]\n  issuer:\n    legal_name: Billing Co Ltd\n" +
			"    number_prefix: BILL\n    payment_instructions: |\n" + instr.String()})
	r := &stRunner{t: t, h: h, bin: procBinary(t), final: map[string]map[string]string{}}
	r.cli(0, "init")
	codes := []string{"AUD", "BHD", "CAD", "CHF", "CLF", "EUR", "GBP", "JPY", "KWD", "NOK", "SEK", "USD"}
	var txs []stTx
	for i, c := range codes {
		txs = append(txs, stTx{id: fmt.Sprintf("t%d", i), agency: "acme", amount: "100", currency: c, at: "2026-03-01T10:00:00Z"})
	}
	r.ingest("2026-03-02T00:00:00Z", txs...)
	r.run("2026-03-02T00:05:00Z", nil)
	var pdf string
	for key := range h.objects() {
		if strings.HasPrefix(key, "agencies/agency=acme/month=2026-03/") && strings.HasSuffix(key, ".pdf") {
			pdf = filepath.Join(h.dir, "reports", filepath.FromSlash(key))
		}
	}
	if pdf == "" {
		t.Fatal("no PDF for acme")
	}
	text, err := exec.Command(pdftotext, pdf, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(text)), " ")
	if n := strings.Count(flat, "acme owes Billing Co Ltd"); n != len(codes) {
		t.Errorf("the PDF's text has %d of the %d amount-due sentences (the others are drawn off the page)", n, len(codes))
	}
	for _, want := range []string{"Line 45: bank transfer.", "Please quote BILL-202603-000001 with your payment."} {
		if !strings.Contains(flat, want) {
			t.Errorf("the PDF's text lacks %q (drawn off page 1)", want)
		}
	}
}
