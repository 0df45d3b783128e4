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
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// The BF.* commands on native keys (internal/keyspace/native.go). Every RedisBloom command a
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
func (s *Server) bloomEntry(key []byte) (*keyspace.Entry, status) {
	e := s.db.GetBytes(key)
	if e == nil {
		return nil, stEmpty
	}
	if e.Kind != keyspace.KindBloom && e.Kind != keyspace.KindNative {
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

// The words of a logged native BF.RESERVE (read, never changed).
var (
	wordReserve     = []byte("BF.RESERVE")
	wordLayout      = []byte("LAYOUT")
	wordBlocked     = []byte(keyspace.LayoutBlocked)
	wordClassic     = []byte(keyspace.LayoutClassic)
	wordWindow      = []byte("WINDOW")
	wordGenerations = []byte("GENERATIONS")
	wordStart       = []byte("START")
	wordSeed        = []byte("SEED")
)

// lowerWord is strings.ToLower(string(b)) without an allocation for the
// option words and values BF.RESERVE knows (ASCII, at most 16 bytes).
func lowerWord(b []byte) string {
	var buf [16]byte
	if len(b) > len(buf) {
		return strings.ToLower(string(b))
	}
	for i, c := range b {
		if c >= 0x80 {
			return strings.ToLower(string(b))
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	for _, w := range [...]string{"nonscaling", "expansion", "layout", "window", "generations", "seed", "start", keyspace.LayoutBlocked, keyspace.LayoutClassic} {
		if string(buf[:len(b)]) == w {
			return w
		}
	}
	return string(buf[:len(b)])
}

// parseWindow reads WINDOW's argument: a Go duration ("24h", "90m",
// "1h30m", "500ms") or a whole number of seconds.
func parseWindow(b []byte) (time.Duration, bool) {
	if v, ok := resp.ParseInt(b); ok {
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
	rate, ok := resp.ParseFloat(args[2])
	if !ok {
		r.Error("ERR bad error rate")
		return
	}
	if !(rate > 0 && rate < 1) {
		r.Error("ERR error rate must be in the range (0.000000, 1.000000)")
		return
	}
	capacity, ok := resp.ParseInt(args[3])
	if !ok {
		r.Error("ERR bad capacity")
		return
	}
	if capacity < 1 || capacity > keyspace.NativeMaxCapacity {
		r.Error("ERR capacity must be in the range [1, 1099511627776] for LAYOUT and WINDOW filters")
		return
	}
	typ := uint8(0)
	var period time.Duration
	gens := 0
	seed, seedSet := uint64(0), false
	startGen, startSet := int64(0), false
	for i := 4; i < len(args); i++ {
		word := lowerWord(args[i])
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
			switch lowerWord(v) {
			case keyspace.LayoutBlocked:
				typ = format.TypeBlocked
			case keyspace.LayoutClassic:
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
			g, ok := resp.ParseInt(v)
			if !ok || g < 1 || g > bloom.MaxGenerations {
				r.Error("ERR GENERATIONS must be in the range [1, 64]")
				return
			}
			gens = int(g)
		case "start":
			if startGen, startSet = resp.ParseInt(v); !startSet {
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
	n, err := keyspace.NativeParams(typ, uint64(capacity), rate, period, gens, seed)
	if err != nil {
		r.Error("ERR could not create filter")
		return
	}
	now := s.db.Now()
	if startSet {
		if !s.db.Loading() && startGen > n.GenAt(now) {
			r.Error("ERR generation is ahead of the server's clock")
			return
		}
		if !n.ValidGen(startGen) {
			r.Error(errGenRange)
			return
		}
		now = time.Unix(0, startGen*n.GenLen)
	}
	if n.Typ == format.TypeWindow {
		n.Cur = n.GenAt(now)
	}
	if !s.placeNative(args[1], n, r) {
		return
	}
	// The logged command: one allocation for the list and one for the
	// seed, as many small keys are reserved one after another (the
	// words are shared; the log only reads them).
	var la [][]byte
	switch typ {
	case format.TypeWindow:
		la = append(make([][]byte, 0, 12), wordReserve, args[1], args[2], args[3],
			wordWindow, append(strconv.AppendInt(nil, int64(period), 10), "ns"...),
			wordGenerations, strconv.AppendInt(nil, int64(gens), 10), wordStart, strconv.AppendInt(nil, n.Cur, 10))
	case format.TypeClassic:
		la = append(make([][]byte, 0, 8), wordReserve, args[1], args[2], args[3], wordLayout, wordClassic)
	default:
		la = append(make([][]byte, 0, 8), wordReserve, args[1], args[2], args[3], wordLayout, wordBlocked)
	}
	c.logArgs = append(la, wordSeed, strconv.AppendUint(nil, seed, 10))
	r.OK()
}

// placeNative gives n (a window already placed in time: n.cur) empty
// arrays, within --maxmemory, and stores it at key.
func (s *Server) placeNative(key []byte, n *keyspace.NativeFilter, r *Reply) bool {
	size := n.ArrayBytes() * uint64(n.Slots())
	if err := s.db.Allow(size); err != nil {
		r.Error(errNoMemory)
		return false
	}
	if err := n.Allocate(); err != nil {
		s.db.Unaccount(size)
		r.Error(errNoMemory)
		return false
	}
	s.db.Put(string(key), &keyspace.Entry{Kind: keyspace.KindNative, NF: n})
	return true
}

// toClock moves a window key to the clock's generation before a write and
// logs the move (not while replaying: the log has the moves).
func (s *Server) toClock(key []byte, n *keyspace.NativeFilter) {
	if n.Typ != format.TypeWindow || s.db.Loading() {
		return
	}
	s.advanceTo(key, n, n.GenAt(s.db.Now()))
}

// advanceTo moves a window to generation g and logs the move.
func (s *Server) advanceTo(key []byte, n *keyspace.NativeFilter, g int64) {
	if g <= n.Cur {
		return
	}
	n.Advance(g)
	s.db.Changed()
	s.logCommand(nil, [][]byte{[]byte("BF.ADVANCE"), key, []byte(strconv.FormatInt(g, 10))})
}

// nativeInsert is BF.ADD, BF.MADD and BF.INSERT on a native key.
func (s *Server) nativeInsert(key []byte, n *keyspace.NativeFilter, items [][]byte, multi bool, r *Reply) {
	s.toClock(key, n)
	p := s.probe()
	if multi {
		r.Array(len(items))
	}
	for _, it := range items {
		r.Bool(n.Add(it, p))
	}
	s.db.Changed()
}

// probe is the server's scratch space for a key's bit positions, used with
// the keyspace locked (a local one would escape to the heap: one allocation
// per command).
func (s *Server) probe() *keyspace.Probe {
	return s.db.Scratch()
}

// nativeExists is BF.EXISTS and BF.MEXISTS on a native key.
func (s *Server) nativeExists(n *keyspace.NativeFilter, items [][]byte, r *Reply) {
	now := s.db.Now()
	p := s.probe()
	for _, it := range items {
		r.Bool(n.Test(it, now, p))
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
	g, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error("ERR generation must be an integer")
		return
	}
	e, st := s.bloomEntry(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	if e.Kind != keyspace.KindNative || e.NF.Typ != format.TypeWindow {
		r.Error("ERR BF.ADVANCE needs a WINDOW filter")
		return
	}
	n := e.NF
	// Already there first: with the clock gone back behind the window,
	// a move to where it stands is 0, as documented, not an error.
	if g <= n.Cur {
		c.skipLog = true
		r.Int(0)
		return
	}
	if !s.db.Loading() && g > n.GenAt(s.db.Now()) {
		r.Error("ERR generation is ahead of the server's clock")
		return
	}
	if !n.ValidGen(g) { // only while loading: the clock's generation is valid
		r.Error(errGenRange)
		return
	}
	n.Advance(g)
	s.db.Changed()
	r.Int(1)
}

// nativeInfo is BF.INFO on a native key: RedisBloom's five fields (a
// native key does not grow: one filter per generation, expansion 0), then
// the native ones.
func (s *Server) nativeInfo(n *keyspace.NativeFilter, args [][]byte, r *Reply) {
	now := s.db.Now()
	fields := []infoField{
		{"capacity", "Capacity", func() { r.Uint(n.Params.N) }},
		{"size", "Size", func() { r.Uint(n.MemUsage()) }},
		{"filters", "Number of filters", func() { r.Int(int64(len(n.Arrays))) }},
		{"items", "Number of items inserted", func() { r.Uint(n.Card(now)) }},
		// 0, not RedisBloom's null for a non-scaling filter: go-redis's
		// BFInfo fails on a null, and these filters never grow.
		{"expansion", "Expansion rate", func() { r.Int(0) }},
		{"layout", "Layout", func() { r.BulkString(n.Layout()) }},
		{"error", "Error rate", func() { r.BulkString(strconv.FormatFloat(n.Params.P, 'g', -1, 64)) }},
		{"hashes", "Hash functions", func() { r.Int(int64(n.Params.K)) }},
		{"bits", "Bits per filter", func() { r.Uint(n.Params.M) }},
		// A bulk string: seeds use all 64 bits, RESP integers are signed.
		{"seed", "Seed", func() { r.BulkString(strconv.FormatUint(n.Params.Seed, 10)) }},
	}
	if n.Typ == format.TypeWindow {
		fields = append(fields,
			infoField{"window", "Window ms", func() { r.Int(n.Period.Milliseconds()) }},
			infoField{"generations", "Generations", func() { r.Int(int64(n.Gens)) }},
			infoField{"generation", "Current generation start ms", func() {
				r.Int(max(n.GenAt(now), n.Cur) * n.GenLen / int64(time.Millisecond))
			}},
		)
	}
	infoReply(r, args, fields)
}

// nativeDebug is BF.DEBUG on a native key: "size:<items>", then a line per
// array, oldest generation first.
func (s *Server) nativeDebug(n *keyspace.NativeFilter, r *Reply) {
	arrays, counts := n.Ordered()
	r.Array(1 + len(arrays))
	r.BulkString("size:" + strconv.FormatUint(n.Card(s.db.Now()), 10))
	for i, a := range arrays {
		line := "bytes:" + strconv.Itoa(len(a)) + " bits:" + strconv.FormatUint(n.Params.M, 10) +
			" hashes:" + strconv.FormatUint(uint64(n.Params.K), 10) + " layout:" + n.Layout() +
			" seed:" + strconv.FormatUint(n.Params.Seed, 10) + " items:" + strconv.FormatUint(counts[i], 10)
		if n.Typ == format.TypeWindow {
			g := n.Cur - int64(n.Gens) + int64(i)
			line += " start_ms:" + strconv.FormatInt(g*n.GenLen/int64(time.Millisecond), 10)
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
func (s *Server) nativeScanDump(n *keyspace.NativeFilter, it int64, r *Reply) {
	r.Array(2)
	if it == 0 {
		r.Int(1)
		r.Bulk(n.FileHeader())
		return
	}
	off := uint64(it - 1)
	size := n.ArrayBytes()
	arrays, counts := n.Ordered()
	if off == n.DataBytes() {
		var b []byte
		for _, c := range counts {
			b = binary.LittleEndian.AppendUint64(b, c)
		}
		r.Int(it + int64(len(b)))
		r.Bulk(b)
		return
	}
	if it < 1 || off > n.DataBytes() {
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
	n, size, err := keyspace.ParseFileHeader(data)
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
func (s *Server) nativeLoadChunk(n *keyspace.NativeFilter, it int64, data []byte, r *Reply) {
	size := n.ArrayBytes()
	if it < 1 || uint64(it-1) < uint64(len(data)) {
		r.Error("ERR invalid iterator")
		return
	}
	off := uint64(it-1) - uint64(len(data))
	if off == n.DataBytes() && len(data) == 8*len(n.Arrays) {
		for i := range n.Arrays {
			slot := i
			if n.Typ == format.TypeWindow {
				slot = n.Slot(n.Cur - int64(n.Gens) + int64(i))
			}
			n.Counts[slot] = binary.LittleEndian.Uint64(data[8*i:])
		}
		s.db.Changed()
		r.OK()
		return
	}
	if off >= n.DataBytes() || off%size+uint64(len(data)) > size {
		r.Error("ERR invalid chunk: outside the filter's arrays")
		return
	}
	arrays, _ := n.Ordered()
	i := int(off / size)
	a := arrays[i]
	lo := off % size
	if n.Guard != nil {
		n.Guard.Write(a, int(lo), len(data))
	}
	copy(a[lo:], data)
	slot := i
	if n.Typ == format.TypeWindow {
		slot = n.Slot(n.Cur - int64(n.Gens) + int64(i))
	}
	n.MarkDirty(slot)
	n.Counts[slot] += bitcount.Ones(data)
	if lo+uint64(len(data)) == size {
		n.Counts[slot] = n.KeysFromBits(n.Counts[slot])
	}
	s.db.Changed()
	r.OK()
}

// nativeMerge is BF.MERGE with native keys: dest (created as a copy of the
// first source if missing) becomes the OR of itself and the sources, which
// must all have one shape. Windows are first moved to one generation.
func (s *Server) nativeMerge(c *Session, args [][]byte, dest *keyspace.Entry, srcs []*keyspace.Entry, r *Reply) {
	shape := srcs[0].NF
	if dest != nil {
		if dest.Kind != keyspace.KindNative {
			r.Error(errMergeShape)
			return
		}
		shape = dest.NF
	}
	for _, e := range srcs {
		if e.Kind != keyspace.KindNative || !shape.SameShape(e.NF) {
			r.Error(errMergeShape)
			return
		}
	}
	if shape.Typ == format.TypeWindow {
		// While replaying, the BF.ADVANCE records logged before the merge
		// have moved the windows where it moved them: the replaying
		// server's clock must not move them further.
		g := int64(math.MinInt64)
		if !s.db.Loading() {
			g = shape.GenAt(s.db.Now())
		}
		if dest != nil {
			g = max(g, dest.NF.Cur)
		}
		for _, e := range srcs {
			g = max(g, e.NF.Cur)
		}
		for i, e := range srcs {
			s.advanceTo(args[2+i], e.NF, g)
		}
		if dest != nil {
			s.advanceTo(args[1], dest.NF, g)
		}
	}
	if dest == nil {
		first := srcs[0].NF
		n := first.Shape()
		if !s.placeNative(args[1], n, r) {
			return
		}
		dest = s.db.GetBytes(args[1])
	}
	s.db.Changed()
	s.runMerge(c, keyspace.NativeMergeJob(dest, keyspace.UniqueSources(dest, srcs)))
	r.OK()
}
