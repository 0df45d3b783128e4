//go:build unix

package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
)

// A replica's full sync from a Redis master without the network: reading
// the master's RDB into a fresh keyspace, writing that keyspace as the
// next snapshot, and readying it to be swapped in (what loadRedisSync and
// persistRedisSync do with the link's bytes). The RDB is generated once,
// shaped as bench/cmd/migbench's source: strings of 16 to 128 bytes, 40 %
// of them with a TTL, and 0.8 % filter keys. Run:
//
//	go test -run '^$' -bench 'FullSync' -benchmem -count 6 ./server
//
// ns/key is per key of the RDB; B/op and allocs/op per sync; cpu-ms/op is
// the process's CPU time (user and system, every thread: the collector's
// included) per sync, which a busy machine changes less than the time.

const syncBenchKeys = 200_000

var (
	syncRDBOnce sync.Once
	syncRDB     []byte
	syncRDBErr  error
)

func fullSyncRDB(b *testing.B) []byte {
	syncRDBOnce.Do(func() { syncRDB, syncRDBErr = makeSyncRDB(syncBenchKeys) })
	if syncRDBErr != nil {
		b.Fatal(syncRDBErr)
	}
	return syncRDB
}

// makeSyncRDB writes an RDB of n keys as Redis 7.0 with RedisBloom writes
// one: aux fields, SELECTDB 0, RESIZEDB, then the keys.
func makeSyncRDB(n int) ([]byte, error) {
	var buf bytes.Buffer
	w, err := rdb.NewWriter(&buf, 10)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(7, 7))
	letters := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	value := func() []byte {
		v := make([]byte, 16+rng.IntN(113))
		if rng.IntN(2) == 0 {
			copy(v, `{"id":`+strconv.Itoa(rng.IntN(1e9))+`,"name":"`)
			for i := 20; i < len(v); i++ {
				v[i] = letters[rng.IntN(26)]
			}
			return v
		}
		for i := range v {
			v[i] = letters[rng.IntN(len(letters))]
		}
		return v
	}
	nbf, ncf := n/200, n*3/1000
	expires := 0
	const now = 1_900_000_000_000
	if err := w.Aux("redis-ver", "7.0.15"); err != nil {
		return nil, err
	}
	if err := w.SelectDB(0); err != nil {
		return nil, err
	}
	for i := 0; i < n-nbf-ncf; i++ {
		if i%5 < 2 {
			expires++
		}
	}
	if err := w.ResizeDB(uint64(n), uint64(expires)); err != nil {
		return nil, err
	}
	for i := 0; i < n-nbf-ncf; i++ {
		exp := int64(-1)
		if i%5 < 2 {
			exp = now + int64(rng.IntN(86_400_000))
		}
		if err := w.String([]byte("user:"+strconv.Itoa(i)), value(), exp); err != nil {
			return nil, err
		}
	}
	for i := 0; i < nbf; i++ {
		f, err := redisbloom.NewBloom(1000, 0.01, 2, false, nil)
		if err != nil {
			return nil, err
		}
		for j := 0; j < 200; j++ {
			f.Add([]byte(fmt.Sprintf("item:%d:%d", i, j)))
		}
		if err := w.Module([]byte("bf:"+strconv.Itoa(i)), -1, rdb.BloomValue{Bloom: f}); err != nil {
			return nil, err
		}
	}
	for i := 0; i < ncf; i++ {
		f, err := redisbloom.NewCuckoo(1000, 2, 20, 1, nil)
		if err != nil {
			return nil, err
		}
		for j := 0; j < 300; j++ {
			f.Insert([]byte(fmt.Sprintf("item:%d:%d", i, j)))
		}
		if err := w.Module([]byte("cf:"+strconv.Itoa(i)), -1, rdb.CuckooValue{Cuckoo: f}); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func BenchmarkFullSync(b *testing.B) {
	data := fullSyncRDB(b)
	s, err := New(Config{NoPersistence: true, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	l := &masterLink{}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := 0; i < b.N; i++ {
		fresh := keyspace.New(0, s.cfg.Now)
		skipped := map[string]int{}
		if err := s.readRedisRDB(l, bufio.NewReaderSize(bytes.NewReader(data), 64<<10), fresh, skipped); err != nil {
			b.Fatal(err)
		}
		if fresh.Len() != syncBenchKeys || len(skipped) != 0 {
			b.Fatalf("loaded %d keys, skipped %v; want %d, none", fresh.Len(), skipped, syncBenchKeys)
		}
		fresh.Lock()
		snap := fresh.BeginSnapshot(1)
		fresh.Unlock()
		if err := fresh.WriteSnapshot(io.Discard, snap); err != nil {
			b.Fatal(err)
		}
		fresh.Lock()
		fresh.EndSnapshot(snap)
		fresh.Unlock()
		fresh.PrepareFor(s.db)
	}
	b.ReportMetric(float64(processCPU(b)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/syncBenchKeys, "ns/key")
}

// processCPU is the process's user and system CPU time so far, in
// nanoseconds.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
