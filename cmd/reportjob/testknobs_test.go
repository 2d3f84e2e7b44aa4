package main

import (
	"errors"
	"testing"
	"time"
)

func TestLoadTestKnobs(t *testing.T) {
	k, err := loadTestKnobs([]string{"HOME=/x", envTestRequestTimeout + "=700ms", envTestMaxBackoff + "=20ms",
		envTestBatchDeadline + "=2s", envTestPartSize + "=5242880"})
	want := testKnobs{requestTimeout: 700 * time.Millisecond, maxBackoff: 20 * time.Millisecond, batchDeadline: 2 * time.Second, partSize: 5 << 20}
	if err != nil || k != want {
		t.Fatalf("loadTestKnobs = %+v, %v; want %+v", k, err, want)
	}
	if k, err := loadTestKnobs(nil); err != nil || k != (testKnobs{}) {
		t.Fatalf("loadTestKnobs(nil) = %+v, %v; want the zero value (defaults)", k, err)
	}
	for _, kv := range []string{envTestRequestTimeout + "=soon", envTestMaxBackoff + "=-1s", envTestPartSize + "=5MiB"} {
		_, err := loadTestKnobs([]string{kv})
		var ue *usageError
		if !errors.As(err, &ue) || exitCode(err) != exitUsage {
			t.Errorf("loadTestKnobs(%q) = %v, want a usage error", kv, err)
		}
	}
}
