package server

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmarks of the operations that walk the keyspace, on 500k keys (a
// large keyspace): one SCAN call, one Prometheus scrape, and the worst
// latency of a command that runs while scrapes do (what the keyspace lock
// costs everyone else). Run:
//
//	go test -run '^$' -bench 'Keyspace500k' -benchtime 20x ./server

const benchKeys = 500_000

var (
	bigOnce sync.Once
	bigSrv  *Server
)

func bigServer(b *testing.B) *Server {
	bigOnce.Do(func() {
		s, err := New(Config{NoPersistence: true, Logger: testLogger(b)})
		if err != nil {
			b.Fatal(err)
		}
		c := &Session{authed: true}
		var r Reply
		for i := 0; i < benchKeys; i++ {
			s.Do(c, [][]byte{[]byte("BF.RESERVE"), []byte("key:" + strconv.Itoa(i)), []byte("0.01"), []byte("10")}, &r)
		}
		bigSrv = s
	})
	return bigSrv
}

func BenchmarkKeyspace500kScan(b *testing.B) {
	s := bigServer(b)
	c := &Session{authed: true}
	var r Reply
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cur := strconv.FormatUint(rng.Uint64()>>1, 10)
		s.Do(c, [][]byte{[]byte("SCAN"), []byte(cur), []byte("COUNT"), []byte("10")}, &r)
		if r.w.Failed() {
			b.Fatal(string(r.Bytes()))
		}
	}
}

func BenchmarkKeyspace500kScrape(b *testing.B) {
	s := bigServer(b)
	h := s.metrics.handler(s)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		scrape(b, h)
		invalidateFilterStats(s)
	}
}

// BenchmarkKeyspace500kCommandDuringScrape reports the worst BF.EXISTS
// latency seen while scrapes run back to back (max-µs).
func BenchmarkKeyspace500kCommandDuringScrape(b *testing.B) {
	s := bigServer(b)
	h := s.metrics.handler(s)
	var stop atomic.Bool
	var worst atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := &Session{authed: true}
		var r Reply
		for !stop.Load() {
			t := time.Now()
			s.Do(c, [][]byte{[]byte("BF.EXISTS"), []byte("key:1"), []byte("x")}, &r)
			if d := time.Since(t).Microseconds(); d > worst.Load() {
				worst.Store(d)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		scrape(b, h)
		invalidateFilterStats(s)
	}
	stop.Store(true)
	<-done
	b.ReportMetric(float64(worst.Load()), "max-µs")
}

func scrape(b *testing.B, h interface {
	ServeHTTP(w http.ResponseWriter, r *http.Request)
}) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 {
		b.Fatal(w.Code)
	}
	io.Copy(io.Discard, w.Body)
}

// BenchmarkDoBFExists is the command layer's cost per command (no
// network): dispatch, lock, handler, metrics and INFO counters.
func BenchmarkDoBFExists(b *testing.B) {
	s, err := New(Config{NoPersistence: true, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	c := &Session{authed: true}
	var r Reply
	s.Do(c, [][]byte{[]byte("BF.ADD"), []byte("k"), []byte("x")}, &r)
	args := [][]byte{[]byte("BF.EXISTS"), []byte("k"), []byte("x")}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Do(c, args, &r)
	}
}

// BenchmarkKeyspace500kRecount compares the memory recount the server ran
// every second before (full: the lock held for the whole pass) with the
// stepwise one (step: one pass in steps of 1 ms; max-µs is the longest
// lock hold of a step).
func BenchmarkKeyspace500kRecount(b *testing.B) {
	s := bigServer(b)
	b.Run("full", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s.db.Lock()
			s.db.Recount()
			s.db.Unlock()
		}
	})
	b.Run("step", func(b *testing.B) {
		var holds []time.Duration
		for i := 0; i < b.N; i++ {
			for {
				s.db.Lock()
				t := time.Now()
				done := s.db.RecountStep(time.Millisecond)
				holds = append(holds, time.Since(t))
				s.db.Unlock()
				if done {
					break
				}
			}
		}
		slices.Sort(holds)
		b.ReportMetric(float64(holds[len(holds)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(holds[len(holds)-1].Microseconds()), "max-µs")
	})
}

// The command path allocates nothing per command, writes included (their
// log record is appended to a reused buffer): BF.EXISTS and BF.ADD with the
// append-only log on.
func TestCommandPathAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts")
	}
	s, err := New(Config{dataDir: newMemDir(), Logger: quietLogger(), AutoSaveLogBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &Session{authed: true}
	var r Reply
	s.Do(c, [][]byte{[]byte("BF.RESERVE"), []byte("k"), []byte("0.01"), []byte("1000000"), []byte("NONSCALING")}, &r)
	s.Do(c, [][]byte{[]byte("BF.RESERVE"), []byte("native"), []byte("0.01"), []byte("1000000"), []byte("LAYOUT"), []byte("blocked")}, &r)
	s.Do(c, [][]byte{[]byte("BF.RESERVE"), []byte("window"), []byte("0.01"), []byte("1000000"), []byte("WINDOW"), []byte("24h")}, &r)
	for _, key := range []string{"k", "native", "window"} {
		items := make([][][]byte, 2000)
		for i := range items {
			items[i] = [][]byte{[]byte("BF.ADD"), []byte(key), []byte(fmt.Sprint("item-", i))}
		}
		exists := [][]byte{[]byte("BF.EXISTS"), []byte(key), []byte("item-1")}
		i := 0
		adds := testing.AllocsPerRun(1000, func() {
			s.Do(c, items[i%len(items)], &r)
			i++
		})
		reads := testing.AllocsPerRun(1000, func() { s.Do(c, exists, &r) })
		if adds > 0.05 || reads > 0 {
			t.Errorf("%s: allocations per command: BF.ADD %.3f, BF.EXISTS %.3f (want none)", key, adds, reads)
		}
	}
	// The other commands of the speed table, as clients send them (upper
	// case), on a cuckoo filter too.
	s.Do(c, [][]byte{[]byte("CF.RESERVE"), []byte("cf"), []byte("1000000")}, &r)
	for _, cmd := range [][][]byte{
		{[]byte("BF.MADD"), []byte("k"), []byte("m1"), []byte("m2"), []byte("m3")},
		{[]byte("BF.MEXISTS"), []byte("k"), []byte("m1"), []byte("m2")},
		{[]byte("CF.ADD"), []byte("cf"), []byte("c1")},
		{[]byte("CF.EXISTS"), []byte("cf"), []byte("c1")},
		{[]byte("CF.MEXISTS"), []byte("cf"), []byte("c1"), []byte("c2")},
	} {
		if n := testing.AllocsPerRun(1000, func() { s.Do(c, cmd, &r) }); n > 0 {
			t.Errorf("allocations per %s: %.3f (want none)", cmd[0], n)
		}
	}
}

// BenchmarkKeyspace500kBeginSnapshot is the time a snapshot's start holds
// the keyspace lock (O(1): an epoch and the key count).
func BenchmarkKeyspace500kBeginSnapshot(b *testing.B) {
	s := bigServer(b)
	for b.Loop() {
		s.db.Lock()
		snap := s.db.BeginSnapshot(1)
		s.db.EndSnapshot(snap)
		s.db.Unlock()
	}

}
