package warm

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGoRunsEveryTask: every task runs once, as many at once as the
// caller starts (none waits for another to finish).
func TestGoRunsEveryTask(t *testing.T) {
	const n = 1000
	var ran atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		Go(func() { defer wg.Done(); ran.Add(1) })
	}
	wg.Wait()
	if got := ran.Load(); got != n {
		t.Fatalf("ran %d tasks, want %d", got, n)
	}

	// Tasks that wait for each other: each must get a goroutine of its
	// own even when idle ones are around.
	const k = 8
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(k)
	var done sync.WaitGroup
	done.Add(k)
	for range k {
		Go(func() {
			started.Done()
			<-release
			done.Done()
		})
	}
	started.Wait() // all k run at once, or this blocks forever
	close(release)
	done.Wait()
}

// TestGoReusesGoroutines: a task handed out while a goroutine waits for
// work runs on that goroutine (the one whose stack is grown).
func TestGoReusesGoroutines(t *testing.T) {
	time.Sleep(IdleFor + 100*time.Millisecond) // the other tests' goroutines have exited
	ids := make(chan string)
	task := func() { ids <- goroutineID() }
	Go(task)
	first := <-ids
	for i := range 20 {
		// Once the goroutine is back waiting (however busy the machine),
		// the task goes to it: as Go does, without starting a new one.
		deadline := time.Now().Add(IdleFor / 2)
		for !handOff(task) {
			if time.Now().After(deadline) {
				t.Fatalf("task %d: no goroutine waiting for work", i+2)
			}
			time.Sleep(time.Millisecond)
		}
		if id := <-ids; id != first {
			t.Fatalf("task %d ran on goroutine %s, want %s (the one waiting)", i+2, id, first)
		}
	}
}

// goroutineID is the number runtime.Stack prints for the calling goroutine.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf)) // "goroutine 7 [running]:"
	return f[1]
}

// BenchmarkDeepTask compares a deep task (a 64 KiB stack) on a new
// goroutine and through Go.
func BenchmarkDeepTask(b *testing.B) {
	deep := func(wg *sync.WaitGroup) func() {
		return func() { defer wg.Done(); recurse(64) }
	}
	b.Run("go", func(b *testing.B) {
		var wg sync.WaitGroup
		for range b.N {
			wg.Add(1)
			go deep(&wg)()
			wg.Wait()
		}
	})
	b.Run("warm", func(b *testing.B) {
		var wg sync.WaitGroup
		for range b.N {
			wg.Add(1)
			Go(deep(&wg))
			wg.Wait()
		}
	})
}

//go:noinline
func recurse(n int) byte {
	var pad [1024]byte
	if n == 0 {
		return pad[0]
	}
	pad[n%len(pad)] = byte(n)
	return recurse(n-1) + pad[(n+1)%len(pad)]
}
