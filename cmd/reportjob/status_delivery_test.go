package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestStatusDeliveryCapsTheList: status prints at most maxFailingShown
// failing deliveries and says how many more there are.
func TestStatusDeliveryCapsTheList(t *testing.T) {
	for _, n := range []int{3, maxFailingShown, maxFailingShown + 5} {
		d := &statusDelivery{Pending: n}
		for i := range n {
			d.Failing = append(d.Failing, statusFailing{Kind: "mail", Target: fmt.Sprintf("agency-%d", i), Attempts: 1, LastError: "no address"})
		}
		var b strings.Builder
		printStatusDelivery(&b, d)
		lines := strings.Count(b.String(), "\n")
		more := strings.Contains(b.String(), "... and 5 more (status --json lists them all)")
		if want := 1 + min(n, maxFailingShown) + map[bool]int{true: 1}[n > maxFailingShown]; lines != want || more != (n > maxFailingShown) {
			t.Errorf("%d failing: %d lines, want %d:\n%s", n, lines, want, b.String())
		}
	}
}
