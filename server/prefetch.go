package server

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// Prefetching a pipeline's filter memory.
//
// A 10M-item filter is far larger than the CPU caches, so each BF.EXISTS
// or CF.ADD waits for main memory once or more, and between two commands
// of a pipeline there is too much other work (parsing, dispatch, the
// reply) for the CPU to overlap those waits. When an event loop has read
// several requests at once, prefetch first walks the complete ones in the
// buffer without consuming them, and for each filter command reads the
// filter bytes the command will read (redisbloom's Prefetch), in one tight
// loop under one hold of the keyspace lock, where the misses overlap. The
// commands then run as usual and find their memory in the cache. (BF.ADD
// and BF.MADD on RedisBloom-layout keys are left alone: the loads of an
// add's bit positions do not depend on each other and overlap anyway, and
// reading them twice cost more than it saved, measured at -P 16. On a
// native key an add is a test of one block per generation first, one
// miss each like a read, and is prefetched like one.) It is
// only a hint: it changes nothing, and whatever happens in between (another
// client's write, an expiry) is seen by the commands as always.

// prefetchMax bounds the requests one prefetch pass looks at (and so the
// time it holds the keyspace lock: well under a microsecond each).
const prefetchMax = 64

// prefetchKinds maps command.idx to how the command reads its filter.
var (
	prefetchOnce  sync.Once
	prefetchKinds []prefetchKind
)

type prefetchKind uint8

const (
	prefetchNone prefetchKind = iota
	prefetchBloomRead
	prefetchCuckooRead
	prefetchCuckooWrite
	prefetchBloomAdd // native keys only (see prefetch)
)

func prefetchKindOf(cmd *command) prefetchKind {
	prefetchOnce.Do(func() {
		prefetchKinds = make([]prefetchKind, len(commandList))
		for _, c := range commandList {
			switch c.name {
			case "bf.exists", "bf.mexists":
				prefetchKinds[c.idx] = prefetchBloomRead
			case "bf.add", "bf.madd":
				prefetchKinds[c.idx] = prefetchBloomAdd
			case "cf.exists", "cf.mexists", "cf.addnx":
				prefetchKinds[c.idx] = prefetchCuckooRead
			case "cf.add":
				prefetchKinds[c.idx] = prefetchCuckooWrite
			}
		}
	})
	return prefetchKinds[cmd.idx]
}

// prefetchSink keeps the bytes read (so the reads are not optimized away).
// Atomic: every event loop prefetches (one add per pass, not per item).
var prefetchSink atomic.Uint32

// prefetchItem is one item a peeked request will look up; key and item
// alias the reader's buffer.
type prefetchItem struct {
	kind      prefetchKind
	key, item []byte
}

// prefetch reads, for the filter commands among the complete requests in
// rd's buffer, the memory they will read (see above), and returns scratch
// for the next call. It does nothing for a buffer holding one request.
// The requests are parsed first and the filters read after, in a loop of
// its own: parsing between two reads would keep the CPU from overlapping
// them.
func (s *Server) prefetch(rd *requestReader, scratch []prefetchItem) []prefetchItem {
	if !rd.severalRequests() {
		return scratch
	}
	items := scratch[:0]
	var (
		name []byte
		kind prefetchKind
	)
	rd.peek(prefetchMax, func(args [][]byte) bool {
		if len(args) < 3 {
			return true
		}
		if name == nil || !bytes.Equal(args[0], name) {
			cmd, ok := lookupCommand(args[0])
			kind = prefetchNone
			if ok {
				kind = prefetchKindOf(cmd)
			}
			name = args[0]
		}
		if kind == prefetchNone {
			return true
		}
		for _, item := range args[2:] {
			if len(items) == prefetchMax {
				return false
			}
			items = append(items, prefetchItem{kind, args[1], item})
		}
		return true
	})
	if len(items) < 2 {
		return items
	}
	// Items of one filter go to its Prefetch together (a pipeline's
	// requests usually name one key).
	var (
		key   []byte
		e     *entry
		sink  byte
		group [prefetchMax][]byte
		n     int
		gkind prefetchKind
		ge    *entry
	)
	flush := func() {
		switch {
		case n == 0 || ge == nil:
		case gkind == prefetchBloomRead && ge.kind == kindBloom:
			sink ^= ge.bf.Prefetch(group[:n]...)
		case (gkind == prefetchBloomRead || gkind == prefetchBloomAdd) && ge.kind == kindNative:
			sink ^= ge.nf.prefetch(s.db.now(), group[:n])
		case gkind != prefetchBloomRead && ge.kind == kindCuckoo:
			sink ^= ge.cf.Prefetch(gkind == prefetchCuckooWrite, group[:n]...)
		}
		n = 0
	}
	s.db.mu.Lock()
	for i := range items {
		it := &items[i]
		if key == nil || !bytes.Equal(it.key, key) {
			e, key = s.db.keys[string(it.key)], it.key
		}
		if e != ge || it.kind != gkind {
			flush()
			ge, gkind = e, it.kind
		}
		group[n] = it.item
		n++
	}
	flush()
	s.db.mu.Unlock()
	prefetchSink.Add(uint32(sink))
	return items
}
