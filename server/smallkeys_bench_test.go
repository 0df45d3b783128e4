package server

import (
	"strconv"
	"testing"
)

// BenchmarkDoSmallKeys is the command layer's cost per command (no
// network) on many small filters: BF.ADD and BF.EXISTS of a new item at a
// key picked at random (a fixed sequence) among smallKeys keys reserved
// with BF.RESERVE 0.01 100, so each command meets a cold entry as in a
// keyspace of one filter per user. ns/op and, under cachegrind, its
// instruction and cache-miss counts compare keyspace layouts.
func BenchmarkDoSmallKeys(b *testing.B) {
	const smallKeys = 20000
	for _, op := range []string{"BF.ADD", "BF.EXISTS"} {
		b.Run(op, func(b *testing.B) {
			s, err := New(Config{NoPersistence: true, Logger: testLogger(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			c := &Session{authed: true}
			var r Reply
			keys := make([][]byte, smallKeys)
			for i := range keys {
				keys[i] = []byte("user:" + strconv.Itoa(i) + ":seen")
				s.Do(c, [][]byte{[]byte("BF.RESERVE"), keys[i], []byte("0.01"), []byte("100")}, &r)
			}
			items := make([][]byte, 1024)
			for i := range items {
				items[i] = []byte("item:" + strconv.Itoa(i))
			}
			args := [][]byte{[]byte(op), nil, nil}
			x := uint64(1)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				args[1], args[2] = keys[x%smallKeys], items[i%len(items)]
				s.Do(c, args, &r)
				if r.failed {
					b.Fatal(string(r.buf))
				}
			}
		})
	}
}
