package pdf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/statement"
)

// TestRenderScriptsGolden renders statements whose agency ids use
// different scripts (so that each font subset differs), draft and final,
// long and one day, concurrently, and wants the sha256 of each in
// testdata/scripts.sha256: a statement PDF is part of the billing record
// (its sha256 is in the month manifest), so a change of fpdf or of the
// patch in third_party/fpdf must not change a byte. -update rewrites it.
func TestRenderScriptsGolden(t *testing.T) {
	type tc struct {
		name string
		s    *statement.Agency
	}
	var cases []tc
	for _, id := range []struct{ name, id string }{
		{"latin", idLatin}, {"greek", idGreek}, {"cyrillic", idCyrillic}, {"cjk", idCJK}, {"emoji", idEmoji},
		{"mixed", "Agência Łódź 東京"},
	} {
		// Published before digests (LegacyChain): their bytes are pinned
		// since then, and a final statement of that time is restored with
		// them. TestRenderDeterministic pins the digest chain.
		day := legacy(realistic(t, id.id))
		day.Days, day.Periods = day.Days[:3], day.Periods[:24]
		final := legacy(realistic(t, id.id))
		final.Status, final.ClosesAt = statement.Final, ""
		cases = append(cases, tc{id.name + "-day", day}, tc{id.name + "-final", final})
	}
	sums := make([]string, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Go(func() {
			sum := sha256.Sum256(render(t, c.s))
			sums[i] = fmt.Sprintf("%s %s\n", hex.EncodeToString(sum[:]), c.name)
		})
	}
	wg.Wait()
	got := strings.Join(sums, "")
	golden := filepath.Join("testdata", "scripts.sha256")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (go test -run TestRenderScriptsGolden -update writes it): %v", err)
	}
	if got != string(want) {
		t.Errorf("the renderings changed; look at them, then -update:\ngot\n%swant\n%s", got, want)
	}
}
