package keys

import "testing"

// TestEscapeAgency: agency ids become one safe object key segment, and back.
func TestEscapeAgency(t *testing.T) {
	for in, want := range map[string]string{
		"acme-1.B_c": "acme-1.B_c", "../x": "..%2Fx", "a/b": "a%2Fb", "%": "%25", "é": "%C3%A9",
		"a b": "a%20b", "..": "..", "=x": "%3Dx",
	} {
		got := EscapeAgency(in)
		if got != want {
			t.Errorf("EscapeAgency(%q) = %q, want %q", in, got, want)
		}
		if back, err := UnescapeAgency(got); err != nil || back != in {
			t.Errorf("UnescapeAgency(%q) = %q, %v", got, back, err)
		}
	}
}
