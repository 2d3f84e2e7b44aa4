package suggest

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	keys := []string{"report.lateness", "report.period", "sink.url", "legal_name", "locale"}
	for _, tt := range []struct{ in, want string }{
		{"report.latenes", "report.lateness"},
		{"REPORT.PERIOD", "report.period"},
		{"sink.ulr", "sink.url"},
		{"legalname", "legal_name"},
		{"lcoale", "locale"},                     // a swap is 2 edits
		{"language", ""},                         // too far from all
		{"", ""},                                 // nothing typed
		{strings.Repeat("x", 65) + "locale", ""}, // too long to be a typo
	} {
		if got := Closest(tt.in, keys); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Closest("ab", []string{"ax", "ay"}); got != "ax" {
		t.Errorf("of equals: %q, want the first", got)
	}
}

func TestHint(t *testing.T) {
	if got := Hint("sink.ulr", []string{"sink.url"}); got != "; did you mean sink.url?" {
		t.Errorf("Hint = %q", got)
	}
	if got := Hint("zzz", []string{"sink.url"}); got != "" {
		t.Errorf("Hint with nothing close = %q", got)
	}
}
