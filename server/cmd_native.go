package server

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/bitcount"
	"github.com/bloomkit/bloomkit/internal/format"
)

// The BF.* commands on native keys (native.go). Every RedisBloom command a
// Bloom client sends — BF.ADD, MADD, INSERT, EXISTS, MEXISTS, CARD, INFO,
// SCANDUMP, LOADCHUNK — answers on a native key with the reply types it
// has on a RedisBloom key, so existing client helpers work unchanged; what
// is new is how a key is created (BF.RESERVE's LAYOUT, WINDOW, GENERATIONS
// and SEED), BF.ADVANCE (a window's move, as the log records it) and
// BF.MERGE of native keys.

// nativeChunk is the most SCANDUMP returns of a native key per call.
const nativeChunk = 1 << 20

// errGenRange answers a START or BF.ADVANCE generation whose window's
// start times would not fit in int64 nanoseconds.
const errGenRange = "ERR generation out of range"

const errMergeShape = "ERR BF.MERGE needs filters of one layout with identical parameters (size, hashes, seed and window)"

// bloomEntry looks key up for a BF command: a RedisBloom or a native key.
func (s *Server) bloomEntry(key []byte) (*entry, status) {
	e := s.db.getb(key)
	if e == nil {
		return nil, stEmpty
	}
	if e.kind != kindBloom && e.kind != kindNative {
		return nil, stMismatch
	}
	return e, stOK
}

// nativeOption reports whether BF.RESERVE's options ask for a native key.
func nativeOption(args [][]byte) bool {
	for _, a := range args[4:] {
		for _, w := range [...]string{"layout", "window", "generations", "seed", "start"} {
			if strings.EqualFold(string(a), w) {
				return true
			}
		}
	}
	return false
}

// parseWindow reads WINDOW's argument: a Go duration ("24h", "90m",
// "1h30m", "500ms") or a whole number of seconds.
func parseWindow(b []byte) (time.Duration, bool) {
	if v, ok := parseInt(b); ok {
		if v <= 0 || v > int64(100*365*24*time.Hour/time.Second) {
			return 0, false
		}
		return time.Duration(v) * time.Second, true
	}
	d, err := time.ParseDuration(string(b))
	if err != nil || d < time.Millisecond || d > 100*365*24*time.Hour {
		return 0, false
	}
	return d, true
}

// BF.RESERVE key error_rate capacity [NONSCALING] [LAYOUT classic|blocked]
// [WINDOW duration [GENERATIONS g] [START generation]] [SEED random|n]
//
// The native form of BF.RESERVE. A native key never grows (NONSCALING is
// accepted and changes nothing, EXPANSION is refused). The seed defaults
// to a random one; the command is logged with the seed it got, so replay
// rebuilds the same filter, and a window with the generation it started
// in (START, which clients leave out: it defaults to the clock's, and may
// not be ahead of it), so that replay does not place it by its own clock.
func (s *Server) reserveNative(c *Session, args [][]byte, r *Reply) {
	rate, ok := parseFloat(args[2])
	if !ok {
		r.Error("ERR bad error rate")
		return
	}
	if !(rate > 0 && rate < 1) {
		r.Error("ERR error rate must be in the range (0.000000, 1.000000)")
		return
	}
	capacity, ok := parseInt(args[3])
	if !ok {
		r.Error("ERR bad capacity")
		return
	}
	if capacity < 1 || capacity > nativeMaxCapacity {
		r.Error("ERR capacity must be in the range [1, 1099511627776] for LAYOUT and WINDOW filters")
		return
	}
	typ := uint8(0)
	var period time.Duration
	gens := 0
	seed, seedSet := uint64(0), false
	startGen, startSet := int64(0), false
	for i := 4; i < len(args); i++ {
		word := strings.ToLower(string(args[i]))
		if word == "nonscaling" {
			continue
		}
		if word == "expansion" {
			r.Error("ERR LAYOUT and WINDOW filters do not grow: EXPANSION is not allowed")
			return
		}
		if word != "layout" && word != "window" && word != "generations" && word != "seed" && word != "start" {
			r.Error("ERR unknown argument '" + string(args[i]) + "'")
			return
		}
		if i+1 == len(args) {
			r.Error("ERR " + strings.ToUpper(word) + " needs a value")
			return
		}
		i++
		v := args[i]
		switch word {
		case "layout":
			switch strings.ToLower(string(v)) {
			case layoutBlocked:
				typ = format.TypeBlocked
			case layoutClassic:
				typ = format.TypeClassic
			default:
				r.Error("ERR LAYOUT must be blocked or classic")
				return
			}
		case "window":
			if period, ok = parseWindow(v); !ok {
				r.Error("ERR WINDOW must be a duration from 1ms to 100 years (24h, 90m, 500ms, or seconds)")
				return
			}
		case "generations":
			g, ok := parseInt(v)
			if !ok || g < 1 || g > bloom.MaxGenerations {
				r.Error("ERR GENERATIONS must be in the range [1, 64]")
				return
			}
			gens = int(g)
		case "start":
			if startGen, startSet = parseInt(v); !startSet {
				r.Error("ERR START must be an integer (a generation: Unix time / generation length)")
				return
			}
		case "seed":
			if strings.EqualFold(string(v), "random") {
				seedSet = false
				continue
			}
			n, err := strconv.ParseUint(string(v), 10, 64)
			if err != nil {
				r.Error("ERR SEED must be random or an integer in the range [0, 18446744073709551615]")
				return
			}
			seed, seedSet = n, true
		}
	}
	if period > 0 {
		if typ == format.TypeClassic {
			r.Error("ERR WINDOW filters use the blocked layout")
			return
		}
		typ = format.TypeWindow
		if gens == 0 {
			gens = bloom.DefaultGenerations
		}
	} else if gens != 0 || startSet {
		r.Error("ERR GENERATIONS and START need WINDOW")
		return
	}
	if typ == 0 {
		typ = format.TypeBlocked
	}
	if !seedSet {
		seed = bloom.RandomSeed()
	}
	if _, st := s.bloomEntry(args[1]); st != stEmpty {
		r.Error(statusErr(st))
		return
	}
	n, err := nativeParams(typ, uint64(capacity), rate, period, gens, seed)
	if err != nil {
		r.Error("ERR could not create filter")
		return
	}
	now := s.db.now()
	if startSet {
		if !s.db.loading && startGen > n.genAt(now) {
			r.Error("ERR generation is ahead of the server's clock")
			return
		}
		if !n.validGen(startGen) {
			r.Error(errGenRange)
			return
		}
		now = time.Unix(0, startGen*n.genLen)
	}
	if n.typ == format.TypeWindow {
		n.cur = n.genAt(now)
	}
	if !s.placeNative(args[1], n, r) {
		return
	}
	la := [][]byte{[]byte("BF.RESERVE"), args[1], args[2], args[3], []byte("LAYOUT"), []byte(layoutBlocked)}
	if typ == format.TypeClassic {
		la[5] = []byte(layoutClassic)
	}
	if typ == format.TypeWindow {
		la = la[:4]
		la = append(la, []byte("WINDOW"), []byte(strconv.FormatInt(int64(period), 10)+"ns"),
			[]byte("GENERATIONS"), []byte(strconv.Itoa(gens)), []byte("START"), []byte(strconv.FormatInt(n.cur, 10)))
	}
	c.logArgs = append(la, []byte("SEED"), []byte(strconv.FormatUint(seed, 10)))
	r.OK()
}

// placeNative gives n (a window already placed in time: n.cur) empty
// arrays, within --maxmemory, and stores it at key.
func (s *Server) placeNative(key []byte, n *nativeFilter, r *Reply) bool {
	size := n.arrayBytes() * uint64(n.slots())
	if err := s.db.allow(size); err != nil {
		r.Error(errNoMemory)
		return false
	}
	if err := n.allocate(); err != nil {
		s.db.used -= size
		r.Error(errNoMemory)
		return false
	}
	s.db.put(string(key), &entry{kind: kindNative, nf: n})
	return true
}

// toClock moves a window key to the clock's generation before a write and
// logs the move (not while replaying: the log has the moves).
func (s *Server) toClock(key []byte, n *nativeFilter) {
	if n.typ != format.TypeWindow || s.db.loading {
		return
	}
	s.advanceTo(key, n, n.genAt(s.db.now()))
}

// advanceTo moves a window to generation g and logs the move.
func (s *Server) advanceTo(key []byte, n *nativeFilter, g int64) {
	if g <= n.cur {
		return
	}
	n.advance(g)
	s.db.dirty++
	s.logCommand(nil, [][]byte{[]byte("BF.ADVANCE"), key, []byte(strconv.FormatInt(g, 10))})
}

// nativeInsert is BF.ADD, BF.MADD and BF.INSERT on a native key.
func (s *Server) nativeInsert(key []byte, n *nativeFilter, items [][]byte, multi bool, r *Reply) {
	s.toClock(key, n)
	p := s.probe()
	if multi {
		r.Array(len(items))
	}
	for _, it := range items {
		r.Bool(n.add(it, p))
	}
	s.db.dirty++
}

// probe is the server's scratch space for a key's bit positions, used with
// the keyspace locked (a local one would escape to the heap: one allocation
// per command).
func (s *Server) probe() *probe {
	p := &s.db.probe
	if p.offsets == nil {
		p.offsets = make([]uint16, 0, bloom.MaxK)
		p.bits = make([]uint64, 0, bloom.MaxK)
	}
	return p
}

// nativeExists is BF.EXISTS and BF.MEXISTS on a native key.
func (s *Server) nativeExists(n *nativeFilter, items [][]byte, r *Reply) {
	now := s.db.now()
	p := s.probe()
	for _, it := range items {
		r.Bool(n.test(it, now, p))
	}
}

// BF.ADVANCE key generation — moves a window key forward to the given
// generation (Unix time / generation length), forgetting the generations
// that expire by then. The server logs one before a write that moved a
// window, so that replay moves it exactly as it moved; a client may send it
// for a generation the clock has reached (a move into the future would
// forget keys early, and is refused). Moving back does nothing.
func cmdBFAdvance(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 3 {
		r.Error(wrongArity("bf.advance"))
		return
	}
	g, ok := parseInt(args[2])
	if !ok {
		r.Error("ERR generation must be an integer")
		return
	}
	e, st := s.bloomEntry(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	if e.kind != kindNative || e.nf.typ != format.TypeWindow {
		r.Error("ERR BF.ADVANCE needs a WINDOW filter")
		return
	}
	n := e.nf
	// Already there first: with the clock gone back behind the window,
	// a move to where it stands is 0, as documented, not an error.
	if g <= n.cur {
		c.skipLog = true
		r.Int(0)
		return
	}
	if !s.db.loading && g > n.genAt(s.db.now()) {
		r.Error("ERR generation is ahead of the server's clock")
		return
	}
	if !n.validGen(g) { // only while loading: the clock's generation is valid
		r.Error(errGenRange)
		return
	}
	n.advance(g)
	s.db.dirty++
	r.Int(1)
}

// nativeInfo is BF.INFO on a native key: RedisBloom's five fields (a
// native key does not grow: one filter per generation, expansion 0), then
// the native ones.
func (s *Server) nativeInfo(n *nativeFilter, args [][]byte, r *Reply) {
	now := s.db.now()
	fields := []infoField{
		{"capacity", "Capacity", func() { r.Uint(n.params.N) }},
		{"size", "Size", func() { r.Uint(n.memUsage()) }},
		{"filters", "Number of filters", func() { r.Int(int64(len(n.arrays))) }},
		{"items", "Number of items inserted", func() { r.Uint(n.card(now)) }},
		// 0, not RedisBloom's null for a non-scaling filter: go-redis's
		// BFInfo fails on a null, and these filters never grow.
		{"expansion", "Expansion rate", func() { r.Int(0) }},
		{"layout", "Layout", func() { r.BulkString(n.layout()) }},
		{"error", "Error rate", func() { r.BulkString(strconv.FormatFloat(n.params.P, 'g', -1, 64)) }},
		{"hashes", "Hash functions", func() { r.Int(int64(n.params.K)) }},
		{"bits", "Bits per filter", func() { r.Uint(n.params.M) }},
		// A bulk string: seeds use all 64 bits, RESP integers are signed.
		{"seed", "Seed", func() { r.BulkString(strconv.FormatUint(n.params.Seed, 10)) }},
	}
	if n.typ == format.TypeWindow {
		fields = append(fields,
			infoField{"window", "Window ms", func() { r.Int(n.period.Milliseconds()) }},
			infoField{"generations", "Generations", func() { r.Int(int64(n.gens)) }},
			infoField{"generation", "Current generation start ms", func() {
				r.Int(max(n.genAt(now), n.cur) * n.genLen / int64(time.Millisecond))
			}},
		)
	}
	infoReply(r, args, fields)
}

// nativeDebug is BF.DEBUG on a native key: "size:<items>", then a line per
// array, oldest generation first.
func (s *Server) nativeDebug(n *nativeFilter, r *Reply) {
	arrays, counts := n.ordered()
	r.Array(1 + len(arrays))
	r.BulkString("size:" + strconv.FormatUint(n.card(s.db.now()), 10))
	for i, a := range arrays {
		line := "bytes:" + strconv.Itoa(len(a)) + " bits:" + strconv.FormatUint(n.params.M, 10) +
			" hashes:" + strconv.FormatUint(uint64(n.params.K), 10) + " layout:" + n.layout() +
			" seed:" + strconv.FormatUint(n.params.Seed, 10) + " items:" + strconv.FormatUint(counts[i], 10)
		if n.typ == format.TypeWindow {
			g := n.cur - int64(n.gens) + int64(i)
			line += " start_ms:" + strconv.FormatInt(g*n.genLen/int64(time.Millisecond), 10)
		}
		r.BulkString(line)
	}
}

// nativeScanDump is BF.SCANDUMP on a native key. The dump is the key as a
// bloomkit file without its CRC trailer: iterator 0 returns the header
// (with a window's start times) and iterator 1; iterator i returns the
// bytes of the arrays (oldest generation first) from offset i-1, at most
// nativeChunk and never across two arrays, and the iterator after them;
// after the arrays comes one more chunk, the generations' counts (u64 each,
// oldest first: a file has no place for them, so that a copy answers
// BF.CARD as the original — `bloom pull` leaves it out of the file);
// iterator 0 with an empty chunk ends it. BF.LOADCHUNK takes the pairs
// back in the same way as RedisBloom's.
func (s *Server) nativeScanDump(n *nativeFilter, it int64, r *Reply) {
	r.Array(2)
	if it == 0 {
		r.Int(1)
		r.Bulk(n.fileHeader())
		return
	}
	off := uint64(it - 1)
	size := n.arrayBytes()
	arrays, counts := n.ordered()
	if off == n.dataBytes() {
		var b []byte
		for _, c := range counts {
			b = binary.LittleEndian.AppendUint64(b, c)
		}
		r.Int(it + int64(len(b)))
		r.Bulk(b)
		return
	}
	if it < 1 || off > n.dataBytes() {
		r.Int(0)
		r.Bulk(nil)
		return
	}
	a := arrays[off/size]
	lo := off % size
	hi := min(lo+nativeChunk, size)
	r.Int(it + int64(hi-lo))
	r.Bulk(a[lo:hi])
}

// isNativeHeader reports whether a LOADCHUNK header is a bloomkit file's.
func isNativeHeader(b []byte) bool { return bytes.HasPrefix(b, []byte(format.Magic)) }

// nativeLoadHeader creates a native key from the header chunk of a dump.
func (s *Server) nativeLoadHeader(key []byte, data []byte, r *Reply) {
	n, size, err := parseFileHeader(data)
	if err != nil {
		r.Error("ERR " + err.Error())
		return
	}
	if size != len(data) {
		r.Error("ERR the header chunk of a bloomkit dump is " + strconv.Itoa(size) + " bytes, got " + strconv.Itoa(len(data)))
		return
	}
	if s.placeNative(key, n, r) {
		r.OK()
	}
}

// nativeLoadChunk writes one data chunk of a dump (see nativeScanDump).
// A loaded file records no count, so each generation's count (BF.CARD) is
// estimated from its bits: counts hold the bits set while a generation is
// loading and become the estimate when its last chunk arrives.
func (s *Server) nativeLoadChunk(n *nativeFilter, it int64, data []byte, r *Reply) {
	size := n.arrayBytes()
	if it < 1 || uint64(it-1) < uint64(len(data)) {
		r.Error("ERR invalid iterator")
		return
	}
	off := uint64(it-1) - uint64(len(data))
	if off == n.dataBytes() && len(data) == 8*len(n.arrays) {
		for i := range n.arrays {
			slot := i
			if n.typ == format.TypeWindow {
				slot = n.slot(n.cur - int64(n.gens) + int64(i))
			}
			n.counts[slot] = binary.LittleEndian.Uint64(data[8*i:])
		}
		s.db.dirty++
		r.OK()
		return
	}
	if off >= n.dataBytes() || off%size+uint64(len(data)) > size {
		r.Error("ERR invalid chunk: outside the filter's arrays")
		return
	}
	arrays, _ := n.ordered()
	i := int(off / size)
	a := arrays[i]
	lo := off % size
	if n.guard != nil {
		n.guard.Write(a, int(lo), len(data))
	}
	copy(a[lo:], data)
	slot := i
	if n.typ == format.TypeWindow {
		slot = n.slot(n.cur - int64(n.gens) + int64(i))
	}
	n.markDirty(slot)
	n.counts[slot] += bitcount.Ones(data)
	if lo+uint64(len(data)) == size {
		n.counts[slot] = n.keysFromBits(n.counts[slot])
	}
	s.db.dirty++
	r.OK()
}

// keysFromBits estimates how many keys set the set bits of one of the
// filter's arrays, as the library's Stats does for its layout; an array
// with every bit set counts as holding its capacity.
func (n *nativeFilter) keysFromBits(set uint64) uint64 {
	if set >= n.params.M {
		return n.params.N
	}
	if n.typ == format.TypeClassic {
		return bitcount.Classic(set, n.params.M, n.params.K)
	}
	return bitcount.Blocked(set, n.params.M, n.params.K)
}

// nativeMerge is BF.MERGE with native keys: dest (created as a copy of the
// first source if missing) becomes the OR of itself and the sources, which
// must all have one shape. Windows are first moved to one generation.
func (s *Server) nativeMerge(c *Session, args [][]byte, dest *entry, srcs []*entry, r *Reply) {
	shape := srcs[0].nf
	if dest != nil {
		if dest.kind != kindNative {
			r.Error(errMergeShape)
			return
		}
		shape = dest.nf
	}
	for _, e := range srcs {
		if e.kind != kindNative || !shape.sameShape(e.nf) {
			r.Error(errMergeShape)
			return
		}
	}
	if shape.typ == format.TypeWindow {
		// While replaying, the BF.ADVANCE records logged before the merge
		// have moved the windows where it moved them: the replaying
		// server's clock must not move them further.
		g := int64(math.MinInt64)
		if !s.db.loading {
			g = shape.genAt(s.db.now())
		}
		if dest != nil {
			g = max(g, dest.nf.cur)
		}
		for _, e := range srcs {
			g = max(g, e.nf.cur)
		}
		for i, e := range srcs {
			s.advanceTo(args[2+i], e.nf, g)
		}
		if dest != nil {
			s.advanceTo(args[1], dest.nf, g)
		}
	}
	if dest == nil {
		first := srcs[0].nf
		n := &nativeFilter{typ: first.typ, params: first.params, period: first.period, gens: first.gens,
			genLen: first.genLen, cur: first.cur}
		if !s.placeNative(args[1], n, r) {
			return
		}
		dest = s.db.getb(args[1])
	}
	s.db.dirty++
	s.runMerge(c, nativeMergeJob(dest, uniqueSources(dest, srcs)))
	r.OK()
}
