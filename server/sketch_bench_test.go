package server

import (
	"strconv"
	"testing"
)

// BenchmarkDoTopKList is TOPK.LIST's cost per command (no network) on a
// Top-K of 50 (width 2000, depth 7, decay 0.925) filled with 100,000
// items drawn from 100,000 values, as serverbench -sketch runs it.
func BenchmarkDoTopKList(b *testing.B) {
	s, err := New(Config{NoPersistence: true, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := &Session{authed: true}
	var r Reply
	s.Do(c, [][]byte{[]byte("TOPK.RESERVE"), []byte("t"), []byte("50"), []byte("2000"), []byte("7"), []byte("0.925")}, &r)
	x := uint64(1)
	for range 100000 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		s.Do(c, [][]byte{[]byte("TOPK.ADD"), []byte("t"), []byte("item:" + strconv.FormatUint(x%100000, 10))}, &r)
	}
	args := [][]byte{[]byte("TOPK.LIST"), []byte("t")}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.Do(c, args, &r)
	}
}
