package extsort

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"github.com/reportjob/reportjob/internal/testenv"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const benchRecords = 1_000_000

// recordGen makes benchmark records on the fly (so that the input does not
// count in the heap): 40-byte keys and 120-byte values.
type recordGen struct {
	r     *rand.Rand
	shape string
	key   []byte
	val   []byte
}

func newRecordGen(seed uint64, shape string) *recordGen {
	g := &recordGen{r: rand.New(rand.NewPCG(seed, 1)), shape: shape, val: make([]byte, 120)}
	for i := range g.val {
		g.val[i] = byte('a' + i%26)
	}
	return g
}

func (g *recordGen) next() (key, value []byte) {
	var raw [20]byte
	binary.LittleEndian.PutUint64(raw[0:], g.r.Uint64())
	binary.LittleEndian.PutUint64(raw[8:], g.r.Uint64())
	binary.LittleEndian.PutUint32(raw[16:], g.r.Uint32())
	switch g.shape {
	case "id":
		// A transaction id: random from the first byte.
		g.key = hex.AppendEncode(g.key[:0], raw[:])
	case "agency":
		// (agency, currency, sort key): 2000 agencies sharing a long
		// prefix, so most comparisons go past the 8-byte prefix.
		agency := int(raw[0])%200*10 + int(raw[1])%10
		g.key = append(g.key[:0], "agency-00"...)
		g.key = append(g.key, byte('0'+agency/1000), byte('0'+agency/100%10), byte('0'+agency/10%10), byte('0'+agency%10))
		g.key = append(g.key, "\x00EUR\x00"...)
		g.key = hex.AppendEncode(g.key, raw[:12])
	}
	copy(g.val, raw[:])
	return g.key, g.val
}

// peakHeap samples the heap's object bytes until stopped.
type peakHeap struct {
	peak atomic.Uint64
	stop chan struct{}
	done sync.WaitGroup
}

func startPeakHeap() *peakHeap {
	p := &peakHeap{stop: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > p.peak.Load() {
			p.peak.Store(v)
		}
	}
	read()
	p.done.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				read()
				return
			case <-t.C:
				read()
			}
		}
	})
	return p
}

func (p *peakHeap) mb() float64 {
	close(p.stop)
	p.done.Wait()
	return float64(p.peak.Load()) / (1 << 20)
}

func BenchmarkSort(b *testing.B) {
	for _, bc := range []struct {
		name    string
		mem     int
		workers int
	}{
		{"inmem", 512 << 20, 1},
		{"spill16MiB", 16 << 20, 1},
		{"spill16MiB-4adders", 16 << 20, 4},
	} {
		for _, shape := range []string{"id", "agency"} {
			b.Run(bc.name+"/"+shape, func(b *testing.B) {
				benchSort(b, bc.mem, bc.workers, shape)
			})
		}
	}
}

// benchSort sorts benchRecords records of shape with a budget of mem,
// added by workers goroutines. It reports the rate over the phases (add,
// sort, iterate), their CPU time, and the peak heap: each iteration starts
// from a collected heap, so the peak is one sort's, with the garbage it
// makes itself. The first iteration of a process also pays for first
// touching its memory, which on some virtual machines costs more than the
// sort itself.
func benchSort(b *testing.B, mem, workers int, shape string) {
	b.ReportAllocs()
	var st Stats
	var addTime, sortTime, iterTime, cpuTime time.Duration
	runtime.GC()
	peak := startPeakHeap()
	for i := 0; b.Loop(); i++ {
		runtime.GC()
		cpu, t0 := testenv.ProcessCPU(), time.Now()
		s := New(Options{Dir: b.TempDir(), MemBytes: mem})
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				g := newRecordGen(uint64(i*workers+w), shape)
				for range benchRecords / workers {
					if err := s.Add(g.next()); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		t1 := time.Now()
		it, err := s.Sort()
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		var prev []byte
		n := 0
		for it.Next() {
			if n%1024 == 0 { // a cheap check that the output is in order
				if bytes.Compare(prev, it.Key()) > 0 {
					b.Fatalf("record %d out of order", n)
				}
				prev = append(prev[:0], it.Key()...)
			}
			n++
		}
		if err := it.Err(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		addTime, sortTime, iterTime = addTime+t1.Sub(t0), sortTime+t2.Sub(t1), iterTime+t3.Sub(t2)
		cpuTime += testenv.ProcessCPU() - cpu
		if n != benchRecords/workers*workers {
			b.Fatalf("%d records out, %d in", n, benchRecords)
		}
		st = s.Stats()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	recs := float64(b.N) * benchRecords
	b.ReportMetric(recs/(addTime+sortTime+iterTime).Seconds(), "rec/s")
	// The phases' wall time, and the CPU time of the whole process: on a
	// shared machine the CPU time is the steadier measure.
	b.ReportMetric(float64(addTime.Nanoseconds())/recs, "add-ns/rec")
	b.ReportMetric(float64(sortTime.Milliseconds())/float64(b.N), "sort-ms")
	b.ReportMetric(float64(iterTime.Nanoseconds())/recs, "next-ns/rec")
	b.ReportMetric(float64(cpuTime.Nanoseconds())/recs, "cpu-ns/rec")
	b.ReportMetric(peak.mb(), "peakMB")
	b.ReportMetric(float64(st.Runs), "runs")
	b.ReportMetric(float64(st.SpilledBytes)/(1<<20), "spilledMB")
}

// BenchmarkAdd measures Add alone, on warm memory: the sorter's buffer is
// emptied, not spilled, when it fills.
func BenchmarkAdd(b *testing.B) {
	s := New(Options{Dir: b.TempDir(), MemBytes: 64 << 20})
	defer s.Close()
	g := newRecordGen(1, "id")
	fill := func() {
		for s.cur.bytes() < s.limit-4096 {
			if err := s.Add(g.next()); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill() // touch the buffer's memory once
	s.cur.reset()
	b.ReportAllocs()
	for b.Loop() {
		if s.cur.bytes() >= s.limit-4096 {
			s.cur.reset()
		}
		if err := s.Add(g.next()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddBatch is BenchmarkAdd with the records handed over in
// batches of 1000 (AddBatch): ns/op is per record.
func BenchmarkAddBatch(b *testing.B) {
	s := New(Options{Dir: b.TempDir(), MemBytes: 64 << 20})
	defer s.Close()
	g := newRecordGen(1, "id")
	var batch Batch
	add := func() {
		if err := batch.Add(g.next()); err != nil {
			b.Fatal(err)
		}
		if batch.Len() == 1000 {
			if err := s.AddBatch(&batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	for s.cur.bytes() < s.limit-(1<<20) { // touch the buffer's memory once
		add()
	}
	s.cur.reset()
	b.ReportAllocs()
	for b.Loop() {
		if s.cur.bytes() >= s.limit-(1<<20) {
			s.cur.reset()
		}
		add()
	}
}

// BenchmarkAddConcurrent adds 1M records from 4 goroutines, one by one
// (Add) or in batches of 1000 (AddBatch), into an in-memory sorter: the
// adds alone, lock contention included. ns/op is per record.
func BenchmarkAddConcurrent(b *testing.B) {
	const workers = 4
	for _, batched := range []bool{false, true} {
		name := "add"
		if batched {
			name = "batch"
		}
		b.Run(name, func(b *testing.B) {
			var elapsed, cpuTime time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				s := New(Options{Dir: b.TempDir(), MemBytes: 1 << 30})
				runtime.GC()
				b.StartTimer()
				cpu, t0 := testenv.ProcessCPU(), time.Now()
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						g := newRecordGen(uint64(i*workers+w), "id")
						var batch Batch
						for range benchRecords / workers {
							var err error
							if batched {
								if err = batch.Add(g.next()); err == nil && batch.Len() == 1000 {
									err = s.AddBatch(&batch)
								}
							} else {
								err = s.Add(g.next())
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
						if err := s.AddBatch(&batch); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(t0)
				cpuTime += testenv.ProcessCPU() - cpu
				b.StopTimer()
				if n := s.Stats().Records; n != benchRecords {
					b.Fatalf("%d records added, want %d", n, benchRecords)
				}
				s.Close()
				b.StartTimer()
			}
			recs := float64(b.N) * benchRecords
			b.ReportMetric(float64(elapsed.Nanoseconds())/recs, "add-ns/rec")
			b.ReportMetric(float64(cpuTime.Nanoseconds())/recs, "cpu-ns/rec")
		})
	}
}
