package server

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
)

// keyWorkloads are the ways many small filters get created: auto-created by
// BF.ADD (capacity 100, 1%, scaling), reserved small in RedisBloom's
// layout, and reserved small in bloomkit's blocked layout.
var keyWorkloads = []struct {
	name string
	args func(key []byte) [][]byte
}{
	{"BFAdd", func(k []byte) [][]byte { return [][]byte{[]byte("BF.ADD"), k, []byte("item")} }},
	{"Reserve", func(k []byte) [][]byte { return [][]byte{[]byte("BF.RESERVE"), k, []byte("0.01"), []byte("100")} }},
	{"ReserveBlocked", func(k []byte) [][]byte {
		return [][]byte{[]byte("BF.RESERVE"), k, []byte("0.01"), []byte("100"), []byte("LAYOUT"), []byte("blocked")}
	}},
}

// heapPerKey creates n keys user:<i>:seen with args on a server without
// persistence and returns the growth of the live Go heap per key.
func heapPerKey(tb testing.TB, n int, args func([]byte) [][]byte) float64 {
	if os.Getenv("BLOOMKIT_KEYMEM_PROFILE") != "" {
		defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
		runtime.MemProfileRate = 1
	}
	s, err := New(Config{NoPersistence: true, Logger: testLogger(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	c := &Session{authed: true}
	var r Reply
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte("user:" + strconv.Itoa(i) + ":seen")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, k := range keys {
		s.Do(c, args(k), &r)
		if r.w.Failed() {
			tb.Fatalf("%q: %s", args(k), r.Bytes())
		}
	}
	keys = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	if f := os.Getenv("BLOOMKIT_KEYMEM_PROFILE"); f != "" {
		if err := writeHeapProfile(f); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.KeepAlive(s)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// BenchmarkKeyBytes reports the live Go heap one small filter key costs
// (heap-B/key), for each way of creating it. Run with -memprofile and
// `go tool pprof -sample_index=inuse_space` to see where the bytes go:
//
//	go test -run '^$' -bench KeyBytes -benchtime 200000x -memprofile /tmp/mem.out ./server
func BenchmarkKeyBytes(b *testing.B) {
	for _, w := range keyWorkloads {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			b.ReportMetric(heapPerKey(b, b.N, w.args), "heap-B/key")
		})
	}
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("heap").WriteTo(f, 0)
}

// Reserving a small blocked key leaves little garbage: its logged command
// is built in two allocations (the list and the seed), the option words
// are matched without copies. The garbage of a million reserves is what
// the heap grows by between collections, resident memory beyond the keys.
func TestReserveBlockedAllocations(t *testing.T) {
	s, err := New(Config{NoPersistence: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &Session{authed: true}
	var r Reply
	const n = 2000
	args := make([][][]byte, n)
	for i := range args {
		args[i] = [][]byte{[]byte("BF.RESERVE"), []byte("user:" + strconv.Itoa(i) + ":seen"), []byte("0.01"), []byte("100"), []byte("LAYOUT"), []byte("blocked")}
	}
	i := 0
	allocs := testing.AllocsPerRun(n-1, func() {
		r.Reset(false)
		s.Do(c, args[i], &r)
		i++
	})
	if r.w.Failed() {
		t.Fatalf("BF.RESERVE: %s", r.Bytes())
	}
	// The entry, its key, the filter, its arrays and bits, the logged
	// command's list and seed; the table's growth now and then.
	t.Logf("%v allocations", allocs)
	if allocs > 10 {
		t.Errorf("BF.RESERVE … LAYOUT blocked makes %v allocations, want at most 10", allocs)
	}
}
