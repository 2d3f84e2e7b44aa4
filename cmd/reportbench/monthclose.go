package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// monthCloseFont is the CJK font the monthclose scenario configures
// (Debian package fonts-ipafont-gothic).
const monthCloseFont = "/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf"

// monthCloseRow is a month of many agencies through its close (issue 32,
// issue 35 target 2): the statements as documents, with a directory, an
// issuer and its logo, three locales and a CJK font.
type monthCloseRow struct {
	Agencies       int   `json:"agencies"`
	DirectoryBytes int64 `json:"directory_bytes"`
	// Draft is `run` of the agencies' hour: the period and the month's
	// first draft (every agency's statement rendered).
	Draft procResult `json:"draft_run"`
	// Rest is `run` of the month's other 743 hours (empty): the draft is
	// rebuilt, no agency's statement changes.
	Rest procResult `json:"rest_run"`
	// Close is `statement --close`: the final, every agency rendered again.
	Close procResult `json:"close"`
	// PDFs and PDFBytes are the final month's agency PDFs in the sink.
	PDFs     int   `json:"final_pdfs"`
	PDFBytes int64 `json:"final_pdf_bytes"`
	// JapaneseChecked says pdftotext found a ja agency's legal name in its
	// final PDF (false when pdftotext is missing).
	JapaneseChecked bool `json:"japanese_checked"`
}

// monthClose measures a month of `agencies` agencies, one purchase each in
// the month's first hour: `run` (the period and the month's draft), `run`
// of the rest of the month, then `statement --close` (the final).
func (b *bench) monthClose(ctx context.Context, agencies int) error {
	if _, err := os.Stat(monthCloseFont); err != nil {
		return fmt.Errorf("monthclose needs the IPA Gothic font (Debian package fonts-ipafont-gothic): %w", err)
	}
	dir, err := b.workdir(fmt.Sprintf("monthclose-%d", agencies))
	if err != nil {
		return err
	}
	defer b.remove(dir)
	reports := filepath.Join(dir, "reports")
	dirFile := filepath.Join(dir, "agencies.csv")
	row := monthCloseRow{Agencies: agencies}
	if row.DirectoryBytes, err = writeDirectory(dirFile, agencies); err != nil {
		return err
	}
	logo := filepath.Join(dir, "logo.png")
	if err := writeLogo(logo); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "month.yaml")
	body := fmt.Sprintf(`job_name: month
store: {backend: embedded, embedded: {path: %q}}
sink: {url: %q}
report:
  period: 1h
  lateness: 2m
  start: %q
  line_items: false
  agency_files: [csv]
  max_periods_per_run: 1000
  recheck_after: []
commission: {default_bps: 1000}
statements:
  timezone: UTC
  close_after: 3d
  agency_files: [pdf, csv]
  directory: %q
  fonts: [%q]
  issuer:
    legal_name: Billing Co Ltd
    address: [1 Main Street, London EC1A 1AA]
    tax_id: GB123456789
    contact: billing@billing.example
    payment_terms: 30d
    payment_instructions: Bank transfer to IBAN GB29 NWBK 6016 1331 9268 19, quoting the statement number.
    logo: %q
    number_prefix: BILL
log: {level: warn}
`, filepath.Join(dir, "store.db"), "file://"+reports, benchPeriod.Start.Format(time.RFC3339), dirFile, monthCloseFont, logo)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return err
	}
	file := filepath.Join(dir, "tx.jsonl")
	if err := writeAgencies(file, agencies); err != nil {
		return err
	}
	month := benchPeriod.Start.Format("2006-01")
	monthEnd := benchPeriod.Start.AddDate(0, 1, 0)
	b.logf("monthclose %d agencies: ingest", agencies)
	if _, err := runProc(ctx, b.bin, nil, "--config", cfg, "ingest", "--file", file, "--allow-late",
		"--now", benchNow.Format(time.RFC3339)); err != nil {
		return err
	}
	b.logf("monthclose %d agencies: run (the period and the month's draft)", agencies)
	if row.Draft, err = runProc(ctx, b.bin, nil, "--config", cfg, "run", "--now", benchNow.Format(time.RFC3339)); err != nil {
		return err
	}
	if tx := int(row.Draft.num("transactions")); tx != agencies {
		return fmt.Errorf("monthclose %d: billed %d transactions, want %d", agencies, tx, agencies)
	}
	b.logf("monthclose %d agencies: run (the rest of the month)", agencies)
	if row.Rest, err = runProc(ctx, b.bin, nil, "--config", cfg, "run", "--now", monthEnd.Add(5*time.Minute).Format(time.RFC3339)); err != nil {
		return err
	}
	b.logf("monthclose %d agencies: statement --close", agencies)
	row.Close, err = runProc(ctx, b.bin, nil, "--config", cfg, "statement", "--close", "--month", month,
		"--now", monthEnd.Add(6*time.Minute).Format(time.RFC3339))
	if err != nil {
		return err
	}
	if s, _ := row.Close.Summary["statement_status"].(string); s != "final" || int(row.Close.num("agencies")) != agencies {
		return fmt.Errorf("monthclose %d: statement --close said %v, want final with %d agencies", agencies, row.Close.Summary, agencies)
	}
	if err := checkFinalPDFs(reports, month, &row); err != nil {
		return err
	}
	b.res.MonthClose = append(b.res.MonthClose, row)
	return nil
}

// checkFinalPDFs counts the month's agency PDFs and reads a ja agency's
// back with pdftotext when it is installed.
func checkFinalPDFs(reports, month string, row *monthCloseRow) error {
	err := filepath.WalkDir(filepath.Join(reports, "agencies"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".pdf") || !strings.Contains(p, "month="+month) {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		row.PDFs++
		row.PDFBytes += info.Size()
		return nil
	})
	if err != nil {
		return err
	}
	if row.PDFs != row.Agencies {
		return fmt.Errorf("monthclose %d: %d PDFs of %s in the sink, want one per agency", row.Agencies, row.PDFs, month)
	}
	if _, err := exec.LookPath("pdftotext"); err != nil || row.Agencies < 4 {
		return nil
	}
	pdfs, err := filepath.Glob(filepath.Join(reports, "agencies", "agency="+agencyID(2), "month="+month, "*.pdf"))
	if err != nil || len(pdfs) != 1 {
		return fmt.Errorf("monthclose: the PDF of %s: %v (%d found)", agencyID(2), err, len(pdfs))
	}
	out, err := exec.Command("pdftotext", pdfs[0], "-").Output()
	if err != nil {
		return fmt.Errorf("pdftotext %s: %w", pdfs[0], err)
	}
	if name := directoryEntry(2)[1]; !bytes.Contains(out, []byte(name)) {
		return fmt.Errorf("monthclose: %s does not print %q:\n%s", pdfs[0], name, out)
	}
	row.JapaneseChecked = true
	return nil
}

// agencyID is the id writeAgencies gives agency i.
func agencyID(i int) string { return fmt.Sprintf("agency-%07d", i) }

// directoryEntry is agency i's row of the directory: half fr-FR, a
// quarter ja (Japanese legal names and addresses), the rest en-GB.
func directoryEntry(i int) []string {
	id := agencyID(i)
	switch i % 4 {
	case 0, 1:
		return []string{id, fmt.Sprintf("Voyages Lumière %04d SARL", i), fmt.Sprintf("%d rue de la Paix\n75002 Paris", 1+i%200),
			"FR", fmt.Sprintf("FR%011d", i), fmt.Sprintf("compta@a%07d.example;direction@a%07d.example", i, i), "fr-FR", "15d"}
	case 2:
		return []string{id, fmt.Sprintf("株式会社サクラ旅行%04d", i), fmt.Sprintf("東京都千代田区丸の内%d-%d\n100-0005", 1+i%9, 1+i%30),
			"JP", fmt.Sprintf("T%013d", i), fmt.Sprintf("keiri@a%07d.example", i), "ja", ""}
	default:
		return []string{id, fmt.Sprintf("Thames Travel %04d Ltd", i), fmt.Sprintf("%d Baker Street\nLondon NW1 6XE", 1+i%300),
			"GB", fmt.Sprintf("GB%09d", i), fmt.Sprintf("accounts@a%07d.example", i), "en-GB", ""}
	}
}

// writeDirectory writes the agency directory of n agencies as CSV and
// returns its size.
func writeDirectory(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	w := csv.NewWriter(bw)
	w.Write([]string{"agency_id", "legal_name", "address", "country", "tax_id", "emails", "locale", "payment_terms"})
	for i := range n {
		w.Write(directoryEntry(i))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	return size, f.Close()
}

// writeLogo writes a small two-colour PNG as the issuer's logo.
func writeLogo(path string) error {
	img := image.NewRGBA(image.Rect(0, 0, 240, 80))
	for y := range 80 {
		for x := range 240 {
			c := color.RGBA{R: 20, G: 60, B: 140, A: 255}
			if (x/20+y/20)%2 == 0 {
				c = color.RGBA{R: 230, G: 180, B: 40, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeMonthCloseMarkdown prints the monthclose table: per step wall, CPU,
// peak RssAnon, and the statements rendered per second and per statement.
func writeMonthCloseMarkdown(w io.Writer, rows []monthCloseRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\n### A month of many agencies closes (one purchase each in the month's first hour; directory fr-FR/ja/en-GB, issuer with a logo, IPA Gothic; statements pdf + csv)")
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "| agencies | step | statements rendered | wall s | CPU s (user+sys) | peak RssAnon MB | statements/s (wall) | ms per statement (wall) | CPU ms per statement |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, x := range rows {
		for _, st := range []struct {
			name     string
			p        procResult
			rendered int
		}{{"`run`: the period + the month's draft", x.Draft, x.Agencies}, {"`run`: the month's other 743 hours", x.Rest, 0},
			{"`statement --close`: the final", x.Close, x.Agencies}} {
			p := st.p
			cpu := (p.UserMS + p.SysMS) / 1000
			rate, per, cpuPer := "", "", ""
			if st.rendered > 0 {
				rate = fmt.Sprintf("%.0f", float64(st.rendered)/(p.WallMS/1000))
				per = fmt.Sprintf("%.2f", p.WallMS/float64(st.rendered))
				cpuPer = fmt.Sprintf("%.2f", 1000*cpu/float64(st.rendered))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %.1f | %.1f | %.0f | %s | %s | %s |\n", count(x.Agencies), st.name, count(st.rendered),
				p.WallMS/1000, cpu, mb(p.PeakAnonKB), rate, per, cpuPer)
		}
		fmt.Fprintf(w, "\nDirectory %s bytes; final PDFs %s (%s bytes); a ja PDF read back with pdftotext: %s.\n",
			count(int(x.DirectoryBytes)), count(x.PDFs), count(int(x.PDFBytes)), yesNo(x.JapaneseChecked))
	}
}
