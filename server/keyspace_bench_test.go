package server

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmarks of the operations that walk the keyspace, on 500k keys (the
// issue's size): one SCAN call, one Prometheus scrape, and the worst
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
		if r.failed {
			b.Fatal(string(r.buf))
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
