package server

import (
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// RedisBloom 8.x limits; the defaults are parameters (filterconfig.go).
const (
	bfErrorCap     = 0.25
	bfMaxCapacity  = 1 << 30
	bfMaxExpansion = 32768
	cfMaxCapacity  = 1 << 30
)

const (
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotFound  = "ERR not found"
	errExists    = "ERR item exists"
	errNoMemory  = "ERR Insufficient memory to create filter"
)

func wrongArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// lookup statuses, as RedisBloom's getValue.
type status int

const (
	stOK status = iota
	stEmpty
	stMismatch
)

func statusErr(st status) string {
	switch st {
	case stEmpty:
		return errNotFound
	case stMismatch:
		return errWrongType
	}
	return errExists
}

func (s *Server) cuckooKey(key []byte) (*redisbloom.Cuckoo, status) {
	e := s.db.GetBytes(key)
	if e == nil {
		return nil, stEmpty
	}
	if e.Kind != keyspace.KindCuckoo {
		return nil, stMismatch
	}
	return e.CF, stOK
}

// argIndex finds word among args[1:] case-insensitively (RMUtil_ArgIndex).
func argIndex(args [][]byte, word string) int {
	for i := 1; i < len(args); i++ {
		if strings.EqualFold(string(args[i]), word) {
			return i
		}
	}
	return -1
}

func (s *Server) createBloom(key []byte, e float64, capacity uint64, expansion uint32, nonScaling bool) (*redisbloom.Bloom, string) {
	n, err := redisbloom.BloomCreateBytes(capacity, e, nonScaling)
	if err != nil {
		if err == redisbloom.ErrTooLarge {
			return nil, errNoMemory
		}
		return nil, "ERR could not create filter"
	}
	if err := s.db.Allow(n); err != nil {
		return nil, errNoMemory
	}
	s.db.Unaccount(n) // NewBloom's own allow call counts it again
	b, err := redisbloom.NewBloom(capacity, e, expansion, nonScaling, s.db.AllowFn())
	if err != nil {
		if err == redisbloom.ErrInvalid {
			return nil, "ERR could not create filter"
		}
		return nil, errNoMemory
	}
	s.db.Put(string(key), &keyspace.Entry{Kind: keyspace.KindBloom, BF: b})
	return b, ""
}

// BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING]
func cmdBFReserve(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) > 4 && nativeOption(args) {
		s.reserveNative(c, args, r)
		return
	}
	if len(args) < 4 || len(args) > 7 {
		r.Error(wrongArity("bf.reserve"))
		return
	}
	e, ok := resp.ParseFloat(args[2])
	if !ok {
		r.Error("ERR bad error rate")
		return
	}
	if !(e > 0 && e < 1) {
		r.Error("ERR error rate must be in the range (0.000000, 1.000000)")
		return
	}
	if e > bfErrorCap {
		e = bfErrorCap
	}
	capacity, ok := resp.ParseInt(args[3])
	if !ok {
		r.Error("ERR bad capacity")
		return
	}
	if capacity < 1 || capacity > bfMaxCapacity {
		r.Error("ERR capacity must be in the range [1, 1073741824]")
		return
	}
	// As RedisBloom: bf-expansion-factor 0 makes filters non-scaling.
	expansion := s.filterConfig().int(fpBFExpansion)
	nonScaling := expansion == 0 || argIndex(args, "NONSCALING") != -1
	if loc := argIndex(args, "EXPANSION"); loc != -1 {
		if loc+1 == len(args) {
			r.Error("ERR no expansion")
			return
		}
		if expansion, ok = resp.ParseInt(args[loc+1]); !ok {
			r.Error("ERR bad expansion")
			return
		}
		if expansion == 0 {
			nonScaling = true
		} else if nonScaling {
			r.Error("Nonscaling filters cannot expand")
			return
		}
		if expansion < 0 || expansion > bfMaxExpansion {
			r.Error("ERR expansion must be in the range [0, 32768]")
			return
		}
	} else if !nonScaling || expansion == 0 {
		if expansion != int64(filterParams[fpBFExpansion].def) {
			// The expansion came from bf-expansion-factor: log it.
			c.logArgs = append(append([][]byte(nil), args...), []byte("EXPANSION"), []byte(strconv.FormatInt(expansion, 10)))
		}
	}
	if _, st := s.bloomEntry(args[1]); st != stEmpty {
		r.Error(statusErr(st))
		return
	}
	if _, msg := s.createBloom(args[1], e, uint64(capacity), uint32(expansion), nonScaling); msg != "" {
		r.Error(msg)
		return
	}
	r.OK()
}

type bfInsertOpts struct {
	capacity   int64
	errorRate  float64
	expansion  int64
	nonScaling bool
	autocreate bool
	multi      bool
	// logCreate: a filter this command creates is logged with its
	// options, which came from parameters other than RedisBloom's
	// defaults (a replay or a replica may run with other ones).
	logCreate bool
}

// defaultBFOpts are what BF.ADD and BF.MADD create a filter with, and
// what BF.INSERT's options start from: the filter parameters in force.
func (s *Server) defaultBFOpts() bfInsertOpts {
	fc := s.filterConfig()
	o := bfInsertOpts{capacity: fc.int(fpBFInitialSize), errorRate: fc.val[fpBFErrorRate], expansion: fc.int(fpBFExpansion), autocreate: true}
	o.nonScaling = o.expansion == 0
	o.logCreate = !fc.bloomDefaults()
	return o
}

// bfInsertCommon adds items to key (BF.ADD, BF.MADD, BF.INSERT). args is
// the command and items its tail: when --maxmemory stops a multi-item add
// part-way, the log gets the command with the items that were applied
// (a replay ignores the limit, and would otherwise apply them all).
func (s *Server) bfInsertCommon(c *Session, args, items [][]byte, o bfInsertOpts, r *Reply) {
	key := args[1]
	e, st := s.bloomEntry(key)
	if st == stOK && e.Kind == keyspace.KindNative {
		s.nativeInsert(key, e.NF, items, o.multi, r)
		return
	}
	var b *redisbloom.Bloom
	if st == stOK {
		b = e.BF
	}
	created := false
	if st == stEmpty && o.autocreate {
		var msg string
		if b, msg = s.createBloom(key, o.errorRate, uint64(o.capacity), uint32(o.expansion), o.nonScaling); msg != "" {
			r.Error(msg)
			return
		}
		created = true
	} else if st != stOK {
		r.Error(statusErr(st))
		return
	}
	if !o.multi {
		added, err := b.Add(items[0])
		if err != nil {
			r.Error(bfAddErr(err))
			return
		}
		if created && o.logCreate {
			c.logArgs = bfInsertArgs(key, o, items)
		}
		r.Bool(added)
		return
	}
	// The reply array stops at the first error, so collect first.
	res := make([]int8, 0, len(items))
	var failure error
	for _, it := range items {
		added, err := b.Add(it)
		if err != nil {
			failure = err
			break
		}
		if added {
			res = append(res, 1)
		} else {
			res = append(res, 0)
		}
	}
	n := len(res)
	applied := items[:len(res)]
	switch {
	case created && o.logCreate && len(applied) > 0:
		c.logArgs = bfInsertArgs(key, o, applied)
	case failure == nil:
	case len(applied) > 0:
		c.logArgs = args[: len(args)-len(items)+len(applied) : len(args)-len(items)+len(applied)]
	case created:
		c.logArgs = bfReserveArgs(key, o)
	default:
		c.skipLog = true // nothing changed
	}
	if failure != nil {
		n++
	}
	r.Array(n)
	for _, v := range res {
		r.Bool(v == 1)
	}
	if failure != nil {
		r.Error(bfAddErr(failure))
	}
}

// bfReserveArgs is the BF.RESERVE that creates the filter BF.INSERT's
// options (or BF.MADD's defaults) create. A non-scaling filter keeps its
// expansion only when that is 0 (EXPANSION 0 says both); otherwise the
// expansion recorded in it, never used, is the replaying server's
// bf-expansion-factor.
func bfReserveArgs(key []byte, o bfInsertOpts) [][]byte {
	la := [][]byte{[]byte("BF.RESERVE"), key, []byte(strconv.FormatFloat(o.errorRate, 'g', -1, 64)), []byte(strconv.FormatInt(o.capacity, 10))}
	if o.nonScaling && o.expansion != 0 {
		return append(la, []byte("NONSCALING"))
	}
	return append(la, []byte("EXPANSION"), []byte(strconv.FormatInt(o.expansion, 10)))
}

// bfInsertArgs is the BF.INSERT that creates the filter o describes, with
// every option spelt out, and adds items to it.
func bfInsertArgs(key []byte, o bfInsertOpts, items [][]byte) [][]byte {
	la := [][]byte{[]byte("BF.INSERT"), key,
		[]byte("CAPACITY"), []byte(strconv.FormatInt(o.capacity, 10)),
		[]byte("ERROR"), []byte(strconv.FormatFloat(o.errorRate, 'g', -1, 64)),
		[]byte("EXPANSION"), []byte(strconv.FormatInt(o.expansion, 10))}
	if o.nonScaling {
		la = append(la, []byte("NONSCALING"))
	}
	la = append(la, []byte("ITEMS"))
	return append(la, items...)
}

func bfAddErr(err error) string {
	if err == redisbloom.ErrFull || err == redisbloom.ErrInsert {
		return err.Error()
	}
	return redisbloom.ErrInsert.Error()
}

// BF.ADD key item / BF.MADD key item...
func cmdBFAdd(s *Server, c *Session, args [][]byte, r *Reply) {
	o := s.defaultBFOpts()
	o.multi = len(args[0]) > 3 && (args[0][3] == 'm' || args[0][3] == 'M')
	if (o.multi && len(args) < 3) || (!o.multi && len(args) != 3) {
		r.Error(wrongArity(lowerName(args[0])))
		return
	}
	s.bfInsertCommon(c, args, args[2:], o, r)
}

// BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item...
func cmdBFInsert(s *Server, c *Session, args [][]byte, r *Reply) {
	o := s.defaultBFOpts()
	o.multi = true
	if len(args) < 4 {
		r.Error(wrongArity("bf.insert"))
		return
	}
	items := -1
	pos := 2
	for pos < len(args) && items < 0 {
		a := args[pos]
		var c0 byte
		if len(a) > 0 {
			c0 = lowerByte(a[0])
		}
		switch c0 {
		case 'i':
			pos++
			items = pos
		case 'e':
			pos++
			if pos == len(args) {
				r.Error(wrongArity("bf.insert"))
				return
			}
			if len(a) > 1 && lowerByte(a[1]) == 'r' {
				v, ok := resp.ParseFloat(args[pos])
				if !ok || !(v > 0 && v < 1) {
					r.Error("Bad error rate")
					return
				}
				if v > bfErrorCap {
					v = bfErrorCap
				}
				o.errorRate = v
			} else {
				v, ok := resp.ParseInt(args[pos])
				if !ok || v < 0 || v > bfMaxExpansion {
					r.Error("Bad expansion")
					return
				}
				o.expansion = v
			}
			pos++
		case 'c':
			pos++
			if pos == len(args) {
				r.Error(wrongArity("bf.insert"))
				return
			}
			v, ok := resp.ParseInt(args[pos])
			if !ok || v < 1 || v > bfMaxCapacity {
				r.Error("Bad capacity")
				return
			}
			o.capacity = v
			pos++
		case 'n':
			if len(a) > 2 && lowerByte(a[2]) == 'c' {
				o.autocreate = false
			} else {
				o.nonScaling = true
			}
			pos++
		default:
			r.Error("Unknown argument received")
			return
		}
	}
	if o.expansion == 0 {
		o.nonScaling = true
	}
	if items < 0 || items == len(args) {
		r.Error(wrongArity("bf.insert"))
		return
	}
	s.bfInsertCommon(c, args, args[items:], o, r)
}

// BF.EXISTS key item / BF.MEXISTS key item...
func cmdBFExists(s *Server, c *Session, args [][]byte, r *Reply) {
	multi := len(args[0]) > 3 && (args[0][3] == 'm' || args[0][3] == 'M')
	if (multi && len(args) < 3) || (!multi && len(args) != 3) {
		r.Error(wrongArity(lowerName(args[0])))
		return
	}
	e, st := s.bloomEntry(args[1])
	if multi {
		r.Array(len(args) - 2)
	}
	if st == stOK && e.Kind == keyspace.KindNative {
		s.nativeExists(e.NF, args[2:], r)
		return
	}
	var b *redisbloom.Bloom
	if st == stOK {
		b = e.BF
	}
	for _, it := range args[2:] {
		r.Bool(st == stOK && b.Exists(it))
	}
}

// BF.CARD key
func cmdBFCard(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity("bf.card"))
		return
	}
	e, st := s.bloomEntry(args[1])
	switch {
	case st == stEmpty:
		r.Int(0)
	case st == stMismatch:
		r.Error(errWrongType)
	case e.Kind == keyspace.KindNative:
		r.Uint(e.NF.Card(s.db.Now()))
	default:
		r.Uint(e.BF.Size)
	}
}

// BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION]
func cmdBFInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 && len(args) != 3 {
		r.Error(wrongArity("bf.info"))
		return
	}
	e, st := s.bloomEntry(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	if e.Kind == keyspace.KindNative {
		s.nativeInfo(e.NF, args, r)
		return
	}
	b := e.BF
	expansion := func() {
		if b.NonScaling() {
			r.Null()
		} else {
			r.Int(int64(b.Growth))
		}
	}
	infoReply(r, args, []infoField{
		{"capacity", "Capacity", func() { r.Uint(b.Capacity()) }},
		{"size", "Size", func() { r.Uint(b.MemUsage()) }},
		{"filters", "Number of filters", func() { r.Int(int64(b.NumLinks())) }},
		{"items", "Number of items inserted", func() { r.Uint(b.Size) }},
		{"expansion", "Expansion rate", expansion},
	})
}

// infoField is one field of BF.INFO: the word that asks for it alone, its
// name in the full reply, and its value's writer.
type infoField struct {
	word, name string
	val        func()
}

// infoReply is BF.INFO's reply: with a field word (args[2]) that field
// alone — a one-element array, a one-entry map in RESP3 — else every field
// as a map (a flat array in RESP2).
func infoReply(r *Reply, args [][]byte, fields []infoField) {
	if len(args) == 3 {
		for _, f := range fields {
			if strings.EqualFold(string(args[2]), f.word) {
				if r.w.RESP3() {
					r.Map(1)
					r.Simple(f.name)
				} else {
					r.Array(1)
				}
				f.val()
				return
			}
		}
		r.Error("Invalid information value")
		return
	}
	r.Map(len(fields))
	for _, f := range fields {
		r.Simple(f.name)
		f.val()
	}
}

// BF.SCANDUMP key iterator
func cmdBFScanDump(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 3 {
		r.Error(wrongArity("bf.scandump"))
		return
	}
	e, st := s.bloomEntry(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	it, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error("Second argument must be numeric")
		return
	}
	if e.Kind == keyspace.KindNative {
		s.nativeScanDump(e.NF, it, r)
		return
	}
	b := e.BF
	r.Array(2)
	if it == 0 {
		r.Int(1)
		r.Bulk(b.Header())
		return
	}
	next, chunk := b.Chunk(it)
	r.Int(next)
	r.Bulk(chunk)
}

// BF.LOADCHUNK key iterator data
func cmdBFLoadChunk(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 4 {
		r.Error(wrongArity("bf.loadchunk"))
		return
	}
	it, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error("ERR Second argument must be numeric")
		return
	}
	e, st := s.bloomEntry(args[1])
	if st == stEmpty && it == 1 && isNativeHeader(args[3]) {
		s.nativeLoadHeader(args[1], args[3], r)
		return
	}
	if st == stOK && e.Kind == keyspace.KindNative {
		s.nativeLoadChunk(e.NF, it, args[3], r)
		return
	}
	if st == stEmpty && it == 1 {
		nb, err := redisbloom.LoadBloomHeader(args[3], s.db.AllowFn())
		if err != nil {
			r.Error(err.Error())
			return
		}
		nb.AllowAlloc = s.db.AllowFn()
		s.db.Put(string(args[1]), &keyspace.Entry{Kind: keyspace.KindBloom, BF: nb})
		r.OK()
		return
	} else if st != stOK {
		r.Error(statusErr(st))
		return
	}
	b := e.BF
	if err := b.LoadChunk(it, args[3]); err != nil {
		r.Error(err.Error())
		return
	}
	s.db.Changed()
	r.OK()
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func lowerName(b []byte) string { return strings.ToLower(string(b)) }

// BF.MERGE dest src [src ...] — bloomkit's extension (RedisBloom has no
// merge): dest becomes the union of the sources (and of itself, if it
// exists): every item any of them reports present, dest reports present.
// All must be RedisBloom-layout Bloom filters with identical links; a
// missing dest is created as a copy of the first source. One command, so
// it is logged (and replayed) as one record.
func cmdBFMerge(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("bf.merge"))
		return
	}
	entries := make([]*keyspace.Entry, 0, len(args)-2)
	native := false
	for _, k := range args[2:] {
		e, st := s.bloomEntry(k)
		if st != stOK {
			r.Error(statusErr(st))
			return
		}
		entries = append(entries, e)
		native = native || e.Kind == keyspace.KindNative
	}
	de, st := s.bloomEntry(args[1])
	if st == stMismatch {
		r.Error(errWrongType)
		return
	}
	if native || (de != nil && de.Kind == keyspace.KindNative) {
		s.nativeMerge(c, args, de, entries, r)
		return
	}
	srcs := make([]*redisbloom.Bloom, len(entries))
	for i, e := range entries {
		srcs[i] = e.BF
	}
	var dest *redisbloom.Bloom
	if de != nil {
		dest = de.BF
	}
	layout := srcs[0]
	if dest != nil {
		layout = dest
	}
	for _, b := range srcs {
		if !layout.SameLayout(b) {
			r.Error(redisbloom.ErrLayout.Error())
			return
		}
	}
	clone := de == nil
	if clone {
		// A copy of the first source: its header now, its bits by the
		// merge job (a copy is an OR into zeros).
		nb, err := redisbloom.LoadBloomHeader(srcs[0].Header(), s.db.AllowFn())
		if err != nil {
			r.Error(errNoMemory)
			return
		}
		nb.AllowAlloc = s.db.AllowFn()
		de = &keyspace.Entry{Kind: keyspace.KindBloom, BF: nb}
		s.db.Put(string(args[1]), de)
	}
	s.db.Changed()
	s.runMerge(c, keyspace.BloomMergeJob(de, keyspace.UniqueSources(de, entries), clone))
	r.OK()
}
