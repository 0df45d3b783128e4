package server

import (
	"math"
	"sync"
	"time"

	"github.com/bloomkit/bloomkit/cuckoo"
	"github.com/bloomkit/bloomkit/internal/bitcount"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// Per-filter metric series (fill ratio, implied false-positive rate, items,
// size) need a pass over each filter's arrays: a popcount of a 1 GiB Bloom
// filter takes about half a second. They are therefore computed outside
// the keyspace lock's long holds: the keys are picked under the lock in
// O(Config.MetricsKeys) from the scan order, and each filter's arrays are
// counted in chunks of filterStatsChunk bytes, the lock taken for one
// chunk at a time (about 50 µs), so commands run between chunks. A filter
// that changes between chunks gives a count that mixes moments, which is
// fine for a gauge. The result is cached for filterStatsTTL, so that
// scrapes from several Prometheus servers do not multiply the work.
//
// Maintaining set-bit counts on every write was the alternative; it would
// add work to BF.ADD's hot path (read-test-set per bit plus a counter
// update) for a value only scrapes need.
const (
	filterStatsChunk = 1 << 20
	filterStatsTTL   = 5 * time.Second
)

type filterRow struct {
	key, typ                 string
	fill, rate, items, bytes float64
}

// filterStats is the cache of per-filter rows.
type filterStats struct {
	mu   sync.Mutex // held while computing: one computation at a time
	rows []filterRow
	at   time.Time
}

// get returns the cached rows, computing them first when older than
// filterStatsTTL.
func (f *filterStats) get(s *Server) []filterRow {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rows != nil && time.Since(f.at) < filterStatsTTL {
		return f.rows
	}
	f.rows = s.computeFilterStats()
	f.at = time.Now()
	return f.rows
}

func (s *Server) computeFilterStats() []filterRow {
	if s.cfg.MetricsKeys <= 0 {
		return []filterRow{}
	}
	keys := make([]string, 0, min(s.cfg.MetricsKeys, 64))
	s.db.Lock()
	keys = s.db.FirstKeys(keys, s.cfg.MetricsKeys)
	s.db.Unlock()
	rows := make([]filterRow, 0, len(keys))
	for _, k := range keys {
		if r, ok := s.filterRow(k); ok {
			rows = append(rows, r)
		}
	}
	return rows
}

// filterRow computes one key's row, locking the keyspace per chunk; false
// when the key is gone (or replaced) meanwhile.
func (s *Server) filterRow(key string) (filterRow, bool) {
	db := s.db
	db.Lock()
	e := s.db.Lookup(key)
	if e == nil || (e.Kind != keyspace.KindBloom && e.Kind != keyspace.KindCuckoo && e.Kind != keyspace.KindNative) {
		db.Unlock()
		return filterRow{}, false
	}
	row := filterRow{key: key}
	// The parts to count: for Bloom each link's bit array, for cuckoo
	// each sub-filter's slots.
	var sizes []int
	var hashes []uint32
	var bucketSize uint16
	switch e.Kind {
	case keyspace.KindBloom:
		row.typ, row.items, row.bytes = "bloom", float64(e.BF.Size), float64(e.BF.MemUsage())
		for i := range e.BF.Links {
			sizes = append(sizes, len(e.BF.Links[i].Data))
			hashes = append(hashes, e.BF.Links[i].Hashes)
		}
	case keyspace.KindNative:
		row.typ, row.items, row.bytes = e.NF.Layout(), float64(e.NF.Card(s.db.Now())), float64(e.NF.MemUsage())
		for range e.NF.Arrays {
			sizes = append(sizes, int(e.NF.ArrayBytes()))
			hashes = append(hashes, e.NF.Params.K)
		}
	case keyspace.KindCuckoo:
		row.typ, row.items, row.bytes = "cuckoo", float64(e.CF.NumItems), float64(e.CF.MemUsage())
		bucketSize = e.CF.BucketSize
		for _, f := range e.CF.Filters {
			sizes = append(sizes, len(f))
		}
	}
	db.Unlock()
	var set, total uint64
	miss := 1.0
	for i, n := range sizes {
		var part uint64
		for off := 0; off < n; off += filterStatsChunk {
			end := min(off+filterStatsChunk, n)
			db.Lock()
			cur, ok := s.filterPart(key, e, i, n)
			if !ok {
				db.Unlock()
				return filterRow{}, false
			}
			if e.Kind != keyspace.KindCuckoo {
				part += bitcount.Ones(cur[off:end])
			} else {
				part += nonzero(cur[off:end])
			}
			db.Unlock()
		}
		if n == 0 {
			continue
		}
		if e.Kind != keyspace.KindCuckoo {
			set += part
			total += uint64(n) * 8
			miss *= 1 - math.Pow(float64(part)/float64(n*8), float64(hashes[i]))
		} else {
			set += part
			total += uint64(n)
			miss *= 1 - cuckoo.ExpectedRate(uint32(bucketSize), 8, float64(part)/float64(n))
		}
	}
	if total > 0 {
		row.fill = float64(set) / float64(total)
	}
	row.rate = 1 - miss
	return row, true
}

// filterPart returns part i of the filter stored at key if key still
// holds entry e and the part still has n bytes (db.mu held).
func (s *Server) filterPart(key string, e *keyspace.Entry, i, n int) ([]byte, bool) {
	if s.db.Lookup(key) != e {
		return nil, false
	}
	switch e.Kind {
	case keyspace.KindBloom:
		if i < len(e.BF.Links) && len(e.BF.Links[i].Data) == n {
			return e.BF.Links[i].Data, true
		}
	case keyspace.KindNative:
		if i < len(e.NF.Arrays) && len(e.NF.Arrays[i]) == n {
			return e.NF.Arrays[i], true
		}
	case keyspace.KindCuckoo:
		if i < len(e.CF.Filters) && len(e.CF.Filters[i]) == n {
			return e.CF.Filters[i], true
		}
	}
	return nil, false
}

func nonzero(p []byte) uint64 {
	var n uint64
	for _, c := range p {
		if c != 0 {
			n++
		}
	}
	return n
}
