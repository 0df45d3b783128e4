package server

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"unsafe"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/generation"
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
		if r.failed {
			tb.Fatalf("%q: %s", args(k), r.buf)
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

// The entry is kept once per key: its size is paid by every key.
func TestEntrySize(t *testing.T) {
	if s := unsafe.Sizeof(entry{}); s > 80 {
		t.Errorf("entry is %d bytes, want at most 80", s)
	}
}

// estimate remembers its last answer: whatever order sizes are asked in,
// each answer is the library's for that type, capacity and rate.
func TestEstimateRemembered(t *testing.T) {
	type ask struct {
		typ      uint8
		capacity uint64
		rate     float64
	}
	asks := []ask{
		{format.TypeBlocked, 100, 0.01}, {format.TypeBlocked, 100, 0.01}, {format.TypeBlocked, 1000, 0.01},
		{format.TypeBlocked, 1000, 0.001}, {format.TypeClassic, 1000, 0.001}, {format.TypeWindow, 1000, 0.001},
		{format.TypeBlocked, 100, 0.01}, {format.TypeClassic, 100, 0.01},
	}
	for _, a := range asks {
		var want bloom.Params
		switch a.typ {
		case format.TypeClassic:
			want = bloom.Estimate(a.capacity, a.rate)
		case format.TypeBlocked:
			want = bloom.EstimateBlocked(a.capacity, a.rate)
		case format.TypeWindow:
			want = bloom.EstimateBlocked(a.capacity, generation.Rate(a.rate))
		}
		if got := estimate(a.typ, a.capacity, a.rate); got != want {
			t.Errorf("estimate(%d, %d, %g) = %+v, want %+v", a.typ, a.capacity, a.rate, got, want)
		}
	}
}
