package pdf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reportjob/reportjob/internal/statement"
	"github.com/reportjob/reportjob/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/*.sha256 and docs/statements/*.png")

func render(t testing.TB, s *statement.Agency) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, s); err != nil {
		t.Fatalf("Render(%q): %v", s.AgencyID, err)
	}
	return buf.Bytes()
}

func writeTemp(t testing.TB, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t testing.TB, tool string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tool, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(tool), strings.Join(args, " "), err, stderr.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("%s %s wrote to stderr (a damaged PDF?):\n%s", filepath.Base(tool), strings.Join(args, " "), s)
	}
	return stdout.String()
}

// pdfText is the text of the PDF at path as pdftotext extracts it.
func pdfText(t testing.TB, path string) string {
	t.Helper()
	return run(t, testenv.RequireTool(t, "pdftotext", "poppler-utils pdftotext"), "-enc", "UTF-8", path, "-")
}

// rasterise renders every page of the PDF at path to PNG at dpi with
// pdftoppm and returns the files, in page order.
func rasterise(t testing.TB, path string, dpi int, args ...string) []string {
	t.Helper()
	tool := testenv.RequireTool(t, "pdftoppm", "poppler-utils pdftoppm")
	out := filepath.Join(t.TempDir(), "page")
	run(t, tool, append(append([]string{"-r", strconv.Itoa(dpi), "-png"}, args...), path, out)...)
	pngs, err := filepath.Glob(out + "-*.png")
	if err != nil {
		t.Fatal(err)
	}
	return pngs
}

var pageOf = regexp.MustCompile(`page (\d+) of (\d+)`)

// TestRenderPoppler renders realistic statements for agency ids in several
// scripts and reads them back with poppler: the text has the agency id
// (CJK and emoji replaced by U+FFFD, rune for rune), the month, the status
// and its close, every amount and count, every manifest sha256 and "page n
// of m" on every page; pdftoppm renders every page.
func TestRenderPoppler(t *testing.T) {
	for _, tc := range []struct {
		name, id, want string
		final          bool
	}{
		{"latin", idLatin, idLatin, false},
		{"greek", idGreek, idGreek, true},
		{"cyrillic", idCyrillic, idCyrillic, false},
		{"cjk", idCJK, strings.Repeat("\uFFFD", 6), false},
		{"emoji", idEmoji, "Sunny Trips \uFFFD\uFFFD", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := realistic(t, tc.id)
			if tc.final {
				s.Status, s.ClosesAt = statement.Final, ""
			}
			path := writeTemp(t, "statement.pdf", render(t, s))
			text := pdfText(t, path)
			// pdftotext may drop a narrow space ("2 → 3" reads "2→3"):
			// phrases are compared without spaces.
			bare := strings.Join(strings.Fields(text), "")

			wants := []string{tc.want, "2026-06", "Europe/Paris", "billing-prod", "statement revision 3",
				"Totals per currency", "Commission due", "Daily commission, USD", "Day by day",
				"Prior-period adjustments", "verify --repair", "2 → 3", "2026-04-30 21:00–22:00", "Audit chain"}
			if tc.final {
				wants = append(wants, "FINAL")
			} else {
				wants = append(wants, "DRAFT", "at the latest 2026-07-03T22:00:00Z")
			}
			for _, w := range wants {
				if !strings.Contains(bare, strings.ReplaceAll(w, " ", "")) {
					t.Errorf("pdftotext output lacks %q", w)
				}
			}
			words := make(map[string]bool)
			for _, w := range strings.Fields(text) {
				words[w] = true
			}
			for _, a := range amounts(s) {
				if !words[a] {
					t.Errorf("pdftotext output lacks the amount %q as a word", a)
				}
			}
			for _, p := range s.Periods {
				if !words[p.Digest] || !words[p.Period.Name()] {
					t.Errorf("pdftotext output lacks period %s or its digest %s", p.Period.Name(), p.Digest)
				}
			}
			for _, a := range s.Adjustments {
				if !words[a.Digest] {
					t.Errorf("pdftotext output lacks the digest %s of adjusted period %s", a.Digest, a.Period.Name())
				}
			}
			if tc.want != tc.id && strings.Contains(bare, strings.ReplaceAll(tc.id, " ", "")) {
				t.Errorf("the id %q printed unreplaced", tc.id)
			}

			if n := checkPages(t, path, text); n < 8 {
				t.Errorf("%d pages, want at least 8 for 720 periods", n)
			}
		})
	}
}

// checkPages checks that every page of the PDF at path says "page n of m"
// in text, and that pdftoppm renders every page; it returns m.
func checkPages(t testing.TB, path, text string) int {
	t.Helper()
	pages := pageOf.FindAllStringSubmatch(text, -1)
	if len(pages) == 0 {
		t.Fatal(`no "page n of m" in the text`)
	}
	n, _ := strconv.Atoi(pages[0][2])
	for i, m := range pages {
		if m[1] != strconv.Itoa(i+1) || m[2] != strconv.Itoa(n) {
			t.Errorf("footer %d is %q, want page %d of %d", i+1, m[0], i+1, n)
		}
	}
	if len(pages) != n {
		t.Errorf("%d page footers, want %d", len(pages), n)
	}
	if pngs := rasterise(t, path, 60); len(pngs) != n {
		t.Errorf("pdftoppm rendered %d pages, want %d", len(pngs), n)
	}
	return n
}

// TestRenderDeterministic renders the same statement repeatedly (also
// concurrently) and wants the same bytes, no clock in the file, no /ID in
// the trailer, and the golden sha256 of testdata/realistic-digest.sha256.
// With -update it rewrites that file.
// The same statement with a LegacyChain (published before digests) must
// still give the bytes of testdata/realistic.sha256, which is never
// rewritten: a final statement published then is restored with them.
func TestRenderDeterministic(t *testing.T) {
	old := render(t, legacy(realistic(t, idLatin)))
	oldSum := sha256.Sum256(old)
	if want, err := os.ReadFile(filepath.Join("testdata", "realistic.sha256")); err != nil || hex.EncodeToString(oldSum[:])+"\n" != string(want) {
		t.Errorf("legacy audit chain: sha256 %x, golden %q (%v): a statement published before digests no longer renders to its bytes",
			oldSum, want, err)
	}
	first := render(t, realistic(t, idLatin))
	var wg sync.WaitGroup
	outs := make([][]byte, 4)
	for i := range outs {
		wg.Go(func() { outs[i] = render(t, realistic(t, idLatin)) })
	}
	wg.Wait()
	for i, b := range outs {
		if !bytes.Equal(b, first) {
			t.Fatalf("render %d differs from the first (%d vs %d bytes)", i+2, len(b), len(first))
		}
	}
	if !bytes.Contains(first, []byte("/CreationDate (D:20260601000000)")) {
		t.Error("CreationDate is not the first instant of the month")
	}
	if bytes.Contains(first, []byte("/ID")) {
		t.Error("the PDF has an /ID")
	}
	sum := sha256.Sum256(first)
	got := hex.EncodeToString(sum[:]) + "\n"
	golden := filepath.Join("testdata", "realistic-digest.sha256")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden (go test -run TestRenderDeterministic -update writes it): %v", err)
	}
	if got != string(want) {
		t.Errorf("sha256 %s, golden %s: the rendering changed; look at it, then -update", strings.TrimSpace(got), strings.TrimSpace(string(want)))
	}
}

// TestRenderEdges renders statements with nothing in them, odd text and
// many currencies: no error, and a PDF pdftotext reads.
func TestRenderEdges(t *testing.T) {
	many := realistic(t, "many")
	for _, code := range []string{"CHF", "CLF", "EUR", "GBP", "KWD", "TND", "UYW"} {
		l := many.Lines[0]
		l.Currency = currency(t, code)
		many.Lines = append(many.Lines, l)
	}
	long := realistic(t, strings.Repeat("Agence de voyages très longue ", 12))
	long.Zone = ""
	for _, tc := range []struct {
		name string
		s    *statement.Agency
		want []string
	}{
		{"empty draft", &statement.Agency{Job: "j", AgencyID: "a", Month: "2026-02", Status: statement.Draft, Revision: 1},
			[]string{"No activity", "None", "No periods", "page 1 of 1"}},
		{"control chars and invalid utf-8", &statement.Agency{Job: "j\x00", AgencyID: "a\tb\x1b\xff\u200bc", Month: "2026-02", Status: statement.Final, Revision: 2},
			[]string{"a b\uFFFD\uFFFD\uFFFDc", "FINAL"}},
		{"decomposed accents", &statement.Agency{Job: "j", AgencyID: "Cafe\u0301 Zu\u0308rich", Month: "2026-02", Status: statement.Final, Revision: 1},
			[]string{"Café Zürich"}},
		{"ten currencies", many, []string{"Daily commission, UYW", "KWD", "page 1 of"}},
		{"long id", long, []string{"très longue", "UTC"}},
		{"128 wide letters", &statement.Agency{Job: "j", AgencyID: strings.Repeat("W", 128), Month: "2026-02", Status: statement.Final, Revision: 1},
			[]string{strings.Repeat("W", 20), "page 1 of 1"}},
		{"128 Cyrillic letters", &statement.Agency{Job: "j", AgencyID: strings.Repeat("Щ", 128), Month: "2026-02", Status: statement.Final, Revision: 1},
			[]string{strings.Repeat("Щ", 20), "page 1 of 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "s.pdf", render(t, tc.s))
			text := pdfText(t, path)
			checkPages(t, path, text)
			flat := strings.Join(strings.Fields(text), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("pdftotext output lacks %q:\n%s", w, flat)
				}
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, nil); !errors.Is(err, ErrBadStatement) {
		t.Errorf("Render(nil) = %v, want ErrBadStatement", err)
	}
	s := realistic(t, idLatin)
	s.Month = "June 2026"
	if err := Render(&buf, s); !errors.Is(err, ErrBadStatement) || !strings.Contains(err.Error(), `"June 2026"`) {
		t.Errorf("Render(month June 2026) = %v, want ErrBadStatement naming the month", err)
	}
	s.Month = "2026-06"
	if err := Render(failWriter{}, s); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Render to a failing writer = %v, want its error", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestPrintable(t *testing.T) {
	if err := glyphs.load(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{idLatin, idLatin},
		{idGreek, idGreek},
		{idCyrillic, idCyrillic},
		{idCJK, "\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"😀x", "\uFFFDx"},
		{"e\u0301", "é"},
		{"a\x00b\nc\xffd", "a\uFFFDb c\uFFFDd"},
		{"1 → 2 – ok", "1 → 2 – ok"},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// BenchmarkRender renders the realistic statement (3 currencies, 30 days,
// 3 adjustments, 720 periods: 12 pages).
func BenchmarkRender(b *testing.B) { benchmarkRender(b, realistic(b, idLatin), nil) }

// BenchmarkRenderDay renders a statement of one day (24 periods, 3
// currencies): 2 pages, like the demo's.
func BenchmarkRenderDay(b *testing.B) { benchmarkRender(b, oneDay(b), nil) }

// BenchmarkRenderDayNewRunes is BenchmarkRenderDay for agencies whose
// ids each bring runes no other statement of the run has (a Greek and a
// Cyrillic letter): the fonts that print the id cut and compress a
// subset of their own every time (fpdf's subset memo misses), the worst
// case. BenchmarkRenderDay renders one agency again and again: every
// subset is memoized after the first statement.
func BenchmarkRenderDayNewRunes(b *testing.B) {
	benchmarkRender(b, oneDay(b), func(s *statement.Agency, i int) {
		s.AgencyID = string(rune(0x3B1+i%24)) + string(rune(0x430+(i/24)%32)) + "-agence"
	})
}

// oneDay is the realistic statement cut to one day.
func oneDay(b *testing.B) *statement.Agency {
	s := realistic(b, idLatin)
	s.Days, s.Periods, s.Adjustments = s.Days[:3], s.Periods[:24], nil
	return s
}

// benchmarkRender renders s b.N times (before the i-th, next(s, i) when
// next is not nil); besides ns/op it reports the process's CPU time per
// PDF (cpu-ms/op, the garbage collector's included).
func benchmarkRender(b *testing.B, s *statement.Agency, next func(s *statement.Agency, i int)) {
	var size int
	cpu := testenv.ProcessCPU()
	for i := 0; b.Loop(); i++ {
		if next != nil {
			next(s, i)
		}
		var buf bytes.Buffer
		if err := Render(&buf, s); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "bytes/pdf")
	b.ReportMetric(float64(testenv.ProcessCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
}
