package sink_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/drivertest"
)

func TestCheckKey(t *testing.T) {
	good := []string{
		"a", "a/b", "period=20240101T0000Z/agency=..%2Fx/summary.csv", "agency=%25",
		"agency=%C3%A9", "..x", "x..", ".hidden", "a-b_c.d=e%f", strings.Repeat("a/", 50) + "z",
	}
	for _, k := range good {
		if err := sink.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range drivertest.BadKeys {
		err := sink.CheckKey(k)
		if !errors.Is(err, sink.ErrBadKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrBadKey", k, err)
			continue
		}
		if k != "" && !strings.Contains(err.Error(), strconv.Quote(k)) {
			t.Errorf("CheckKey(%q) = %q, does not name the key", k, err)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		ok     bool
	}{
		{"", true}, {"a", true}, {"a/", true}, {"period=2024", true}, {"a/b/", true}, {"a/..", true}, {"..", true},
		{"/", false}, {"/a", false}, {"a//", false}, {"../", false}, {"a/../", false}, {"./", false}, {"a b", false}, {"é", false},
	}
	for _, tt := range tests {
		err := sink.CheckPrefix(tt.prefix)
		if tt.ok != (err == nil) || (err != nil && !errors.Is(err, sink.ErrBadKey)) {
			t.Errorf("CheckPrefix(%q) = %v, want ok=%v", tt.prefix, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(tt.prefix)) {
			t.Errorf("CheckPrefix(%q) = %q, does not name the prefix", tt.prefix, err)
		}
	}
}
