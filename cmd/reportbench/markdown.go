package main

import (
	"fmt"
	"io"
	"strings"
)

// writeMarkdown prints the results as the tables of PERFORMANCE.md.
func writeMarkdown(w io.Writer, r *results) {
	m := r.Machine
	fmt.Fprintf(w, "Machine: %d CPUs (%s), %d MB, Linux %s, %s. Mode: %s. Started %s.\n\n",
		m.CPUs, m.CPUModel, m.MemoryMB, m.Kernel, m.Go, r.Mode, r.Started.Format("2006-01-02 15:04 MST"))
	fmt.Fprintln(w, "| scenario | seconds | load average at start | at end |")
	fmt.Fprintln(w, "|---|---:|---|---|")
	for _, s := range r.Sections {
		fmt.Fprintf(w, "| %s | %.0f | %s | %s |\n", s.Name, s.Seconds, s.LoadStart, s.LoadEnd)
	}
	if r.Failed != "" {
		fmt.Fprintf(w, "\n**Stopped by a failed scenario** (the tables hold what ran before it): %s\n", r.Failed)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "\nSkipped: %s\n", s)
	}

	if len(r.Run) > 0 {
		fmt.Fprintln(w, "\n### `run`, embedded store, one hourly period, 500 agencies (the binary; RSS sampled every 10 ms)")
		fmt.Fprintln(w, "")
		paired := r.Run[0].Repeats > 1
		pairedHead, pairedRule := "", ""
		if paired {
			pairedHead, pairedRule = " paired ratio |", "---:|"
		}
		fmt.Fprintln(w, "| transactions | line items | dedupe window | statement files | wall s | tx/s | raw read items/s | ratio |"+
			pairedHead+" peak RssAnon MB | peak RssFile MB | maxrss MB | CPU s (of which system) | objects |")
		fmt.Fprintln(w, "|---:|---|---|---|---:|---:|---:|---:|"+pairedRule+"---:|---:|---:|---:|---:|")
		for _, x := range r.Run {
			p := x.Proc
			window := "35d"
			if x.NoWindow {
				window = "0 (no index)"
			}
			files := "pdf, csv"
			if x.NoStatementFiles {
				files = "none"
			}
			wall, ratio, anon := fmt.Sprintf("%.1f", p.WallMS/1000), fmt.Sprintf("%.0f %%", 100*x.Ratio), mb(p.PeakAnonKB)
			if x.Repeats > 1 {
				walls := make([]string, len(x.WallsMS))
				for i, ms := range x.WallsMS {
					walls[i] = fmt.Sprintf("%.1f", ms/1000)
				}
				wall = fmt.Sprintf("%s (%s)", wall, strings.Join(walls, ", "))
				ratio = fmt.Sprintf("%.0f %% (%.0f, %.0f)", 100*x.Ratio, 100*x.MedianRatio, 100*x.FirstRatio)
				anon = mb(x.PeakAnonMaxKB)
			}
			if paired {
				each := make([]string, len(x.PairedRatios))
				for i, pr := range x.PairedRatios {
					each[i] = fmt.Sprintf("%.0f", 100*pr)
				}
				ratio += fmt.Sprintf(" | %.0f %% (%s)", 100*x.PairedMedianRatio, strings.Join(each, ", "))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %.0f | %.1f (%.1f) | %d |\n",
				count(x.Size), yesNo(x.LineItems), window, files, wall, count(int(x.TxPerSec)), count(int(x.RawReadPerSec)),
				ratio, anon, mb(p.PeakFileKB), mb(p.MaxRSSKB), (p.UserMS+p.SysMS)/1000, p.SysMS/1000, x.Objects)
		}
		if len(r.Run) > 0 && r.Run[0].Repeats > 1 {
			fmt.Fprintf(w, "\nEach job ran %d times, the five in turn: wall s is the fastest run's (every run's in brackets, in order), "+
				"the ratio the fastest's (the median's, the first's), tx/s and CPU the fastest's, peak RssAnon the highest of all %d. "+
				"The paired ratio is each run's ratio to a raw read pass made just before it (their median, then each in order).\n",
				r.Run[0].Repeats, r.Run[0].Repeats)
		}
		fmt.Fprintln(w, "\nRaw read of the same items from the store (one goroutine, best of 3):")
		fmt.Fprintln(w, "")
		fmt.Fprintln(w, "| transactions | Query + decode items/s | + item.Parse items/s |")
		fmt.Fprintln(w, "|---:|---:|---:|")
		for _, x := range r.RawRead {
			fmt.Fprintf(w, "| %s | %s | %s |\n", count(x.Size), count(int(x.ReadPerSec)), count(int(x.ParsePerSec)))
		}
	}

	if len(r.Ingest) > 0 {
		fmt.Fprintln(w, "\n### `ingest` into the embedded store (the binary)")
		fmt.Fprintln(w, "")
		fmt.Fprintln(w, "| source | records | wall s | records/s | peak RssAnon MB | CPU s |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
		for _, x := range r.Ingest {
			src := "--generate"
			if x.Source == "jsonl" {
				src = fmt.Sprintf("--file (JSON Lines, %d MB)", x.FileBytes>>20)
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %s | %.0f | %.1f |\n", src, count(x.Size), x.Proc.WallMS/1000,
				count(int(x.PerSec)), mb(x.Proc.PeakAnonKB), (x.Proc.UserMS+x.Proc.SysMS)/1000)
		}
	}

	if len(r.DDBIngest) > 0 {
		fmt.Fprintln(w, "\n### Ingest into DynamoDB Local (PutItems: BatchWriteItem of 25, concurrent writers)")
		fmt.Fprintln(w, "")
		fmt.Fprintln(w, "| records | writers | records/s | BatchWriteItem requests | WCU |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|")
		for _, x := range r.DDBIngest {
			fmt.Fprintf(w, "| %s | %d | %s | %d | %.0f |\n", count(x.Size), x.Writers, count(int(x.PerSec)), x.Requests, x.WCU)
		}
	}

	if len(r.Growth) > 0 {
		fmt.Fprintln(w, "\n### Cost growth on DynamoDB Local: new transactions in one hour, older ones over 30 days")
		fmt.Fprintln(w, "")
		fmt.Fprintln(w, "| older items | new | run s (fastest of 3) | items read | read amp. | Query req. | Query RCU | Scan s | Scan req. | scanned | Scan RCU | Scan/run time |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, x := range r.Growth {
			runs := make([]string, len(x.RunsMS))
			for i, v := range x.RunsMS {
				runs[i] = fmt.Sprintf("%.2f", v/1000)
			}
			fmt.Fprintf(w, "| %s | %s | %.2f (%s) | %s | %.2f | %d | %.0f | %.2f | %d | %s | %.0f | %.1fx |\n",
				count(x.Old), count(x.New), x.RunMS/1000, strings.Join(runs, ", "), count(int(x.ItemsRead)), x.ReadAmp,
				x.QueryRequests, x.QueryRCU, x.ScanMS/1000, x.ScanRequests, count(int(x.ScanScanned)), x.ScanRCU, x.ScanMS/x.RunMS)
		}
		first, last := r.Growth[0], r.Growth[len(r.Growth)-1]
		fmt.Fprintf(w, "\nIncremental run time at %s older items / at %s: %.2fx. Scan time: %.2fx.\n",
			count(last.Old), count(first.Old), last.RunMS/first.RunMS, last.ScanMS/first.ScanMS)
		per := 1e6 / float64(last.New)
		fmt.Fprintf(w, "\nExtra reads per million transactions (from the %s-item run): recheck %s items in %s Query requests (one re-read per recheck delay); dedupe index %s BatchGetItem requests (%.0f RCU) and %s BatchWriteItem requests (%.0f WCU, claims and the period's id list).\n",
			count(last.Old), count(int(float64(last.RecheckItems)*per)), count(int(float64(last.RecheckQueries)*per)),
			count(int(float64(last.IndexReads.Requests)*per)), last.IndexReads.Capacity*per,
			count(int(float64(last.IndexWrites.Requests)*per)), last.IndexWrites.Capacity*per)
	}

	if len(r.Concurrency) > 0 {
		fmt.Fprintln(w, "\n### DynamoDB path: 8 shards x 4 quarters on DynamoDB Local")
		fmt.Fprintln(w, "")
		fmt.Fprintln(w, "| items | partitions (empty) | report.concurrency | read s | read items/s | client CPU s during read | Query req. | run s (line items) | index BatchGetItem / BatchWriteItem req. |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, x := range r.Concurrency {
			fmt.Fprintf(w, "| %s | %d (%d) | %d | %.2f | %s | %.2f | %d | %.2f | %d / %d |\n", count(x.Items), x.Partitions, x.EmptyParts,
				x.Concurrency, x.ReadMS/1000, count(int(float64(x.Items)/(x.ReadMS/1000))), x.ReadCPUMS/1000, x.Queries, x.RunMS/1000,
				x.IndexReads.Requests, x.IndexWrites.Requests)
		}
		if len(r.Concurrency) == 2 {
			a, b := r.Concurrency[0], r.Concurrency[1]
			fmt.Fprintf(w, "\nSpeedup of concurrency %d over %d: read %.2fx, whole run %.2fx.\n",
				b.Concurrency, a.Concurrency, a.ReadMS/b.ReadMS, a.RunMS/b.RunMS)
		}
	}
	if len(r.Split) > 0 {
		fmt.Fprintln(w, "\n### DynamoDB path: where the time goes (8 shards x 4 quarters, report.concurrency 8, line items, fresh state table)")
		fmt.Fprintln(w, "")
		fmt.Fprintln(w, "| run | items | wall s | client CPU s | server CPU s | read s (client / server CPU) | dedupe s (client / server CPU) | index wait s (Commit) | lookups s (background) | Query | BatchGetItem | BatchWriteItem state | PutItem | UpdateItem | GetItem | load at start |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, x := range r.Split {
			req := func(op string) int64 {
				return sumCounts(x.Requests, func(o, _ string) bool { return o == op }).Requests
			}
			fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %.1f | %.1f (%.1f / %.1f) | %.1f (%.1f / %.1f) | %.1f (%.1f) | %.1f | %d | %d | %d | %d | %d | %d | %s |\n",
				x.Run, count(x.Items), x.RunMS/1000, x.ClientCPUMS/1000, x.ServerCPUMS/1000,
				x.ReadMS/1000, x.ReadClientCPUMS/1000, x.ReadServerCPUMS/1000, x.DedupeMS/1000, x.DedupeClientCPUMS/1000, x.DedupeServerCPUMS/1000,
				x.IndexWaitMS/1000, x.CommitMS/1000, x.LookupMS/1000, x.Requests["Query data"].Requests, req("BatchGetItem"),
				x.Requests["BatchWriteItem state"].Requests, req("PutItem"), req("UpdateItem"), req("GetItem"), x.LoadStart)
		}
	}
	if len(r.BigPeriod) > 0 {
		fmt.Fprintln(w, "\n### `run`, embedded store, one hourly period of many agencies (one purchase each; line items; agency files csv and parquet)")
		fmt.Fprintln(w, "")
		fmt.Fprintln(w, "| agencies | objects | wall s (the period's part) | peak RssAnon MB | CPU s | manifest.json bytes | parts (bytes) | read manifest.json ms | read whole ms | unchanged backfill s (RssAnon MB, CPU s) | bare loop s (CPU s, syncfs s) |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, x := range r.BigPeriod {
			p, u, bl := x.Proc, x.Unchanged, x.Bare
			fmt.Fprintf(w, "| %s | %s | %.1f (%.1f) | %.0f | %.1f | %s | %d (%s) | %.1f | %.0f | %.1f (%.0f, %.1f) | %.1f (%.1f, %.1f) |\n", count(x.Agencies), count(int(x.Objects)),
				p.WallMS/1000, p.PeriodMS/1000, mb(p.PeakAnonKB), (p.UserMS+p.SysMS)/1000, count(int(x.ManifestBytes)), x.Parts, count(int(x.PartBytes)),
				x.ReadManifestMS, x.ReadWholeMS, u.WallMS/1000, mb(u.PeakAnonKB), (u.UserMS+u.SysMS)/1000,
				bl.WallMS/1000, (bl.UserMS+bl.SysMS)/1000, bl.SyncMS/1000)
		}
		for _, x := range r.BigPeriod {
			writeCompareMarkdown(w, x.Agencies, x.Compare)
		}
	}
	writeMonthCloseMarkdown(w, r.MonthClose)
	writeScalingMarkdown(w, r.Scaling)
	fmt.Fprintln(w)
}

// writeCompareMarkdown writes the before/after runs of a bigperiod row
// (compare.go), in the order they ran.
func writeCompareMarkdown(w io.Writer, agencies int, c *compareResult) {
	if c == nil || len(c.Runs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### The same run of %s agencies, before (`%s`) and after, in turns\n\n", count(agencies), c.Before)
	fmt.Fprintln(w, "| # | binary | started (UTC) | load average | wall s (the period's part) | CPU s (user + system) | peak RssAnon MB |")
	fmt.Fprintln(w, "|---:|---|---|---|---:|---:|---:|")
	for i, r := range c.Runs {
		p := r.Proc
		fmt.Fprintf(w, "| %d | %s | %s | %s | %.1f (%.1f) | %.1f (%.1f + %.1f) | %.0f |\n", i+1, r.Binary, r.Started.Format("15:04:05"), r.Load,
			p.WallMS/1000, p.PeriodMS/1000, (p.UserMS+p.SysMS)/1000, p.UserMS/1000, p.SysMS/1000, mb(p.PeakAnonKB))
	}
	if c.WallRatio > 0 {
		fmt.Fprintf(w, "\nThe before binary's mean over the after binary's: wall %.2fx, CPU %.2fx.\n", c.WallRatio, c.CPURatio)
	}
}

func mb(kb int64) float64 { return float64(kb) / 1024 }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// count writes n with thousands separators: 1,000,000.
func count(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
