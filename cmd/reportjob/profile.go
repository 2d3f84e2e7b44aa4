//go:build rjprof

package main

// Profiling for measurements (PERFORMANCE.md), built only with
// `go build -tags rjprof`: with RJPROF_DIR set, the process writes
// cpu.pprof (the whole run) and heap-NNN.pprof (a heap profile taken at
// each new peak of the live heap or of RssAnon, 5 % above the last one)
// into that folder, and heap.txt: both figures at each profile taken.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

func init() {
	dir := os.Getenv("RJPROF_DIR")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	cpu, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		panic(err)
	}
	log, err := os.Create(filepath.Join(dir, "heap.txt"))
	if err != nil {
		panic(err)
	}
	runtime.MemProfileRate = 64 << 10
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var live, anon uint64
		n := 0
		start := time.Now()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			v, a := s[0].Value.Uint64(), rssAnon()
			if v > live+live/20 || a > anon+anon/20 {
				live, anon = max(live, v), max(anon, a)
				n++
				if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("heap-%03d.pprof", n))); err == nil {
					pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
				fmt.Fprintf(log, "%03d %.1fs live heap %d MiB RssAnon %d MiB\n", n, time.Since(start).Seconds(), v>>20, a>>10)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	atExit = func() {
		close(done)
		<-stopped
		pprof.StopCPUProfile()
		cpu.Close()
		log.Close()
	}
}

// rssAnon returns RssAnon in kB.
func rssAnon() uint64 {
	b, _ := os.ReadFile("/proc/self/status")
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
