package server

import (
	"bytes"
	"math"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
	"github.com/bloomkit/bloomkit/topk"
)

// RedisBloom's Top-K commands, answering as RedisBloom 8 does
// (src/rm_topk.c). Items in replies are C strings there: an item holding a
// NUL byte is answered up to it.
//
// RedisBloom draws its decays from the C library's rand() and replicates
// TOPK.ADD as sent, so its replicas drift apart from their master. Here a
// Top-K's draws come from a generator saved with it (package topk): the
// same commands on the same state make the same choices, so the commands
// are logged as they were sent and a replay or a replica reproduces
// exactly what clients saw.

var topkCommands = []*command{
	{name: "topk.reserve", arity: -3, flags: []string{"write", "denyoom", "module", "fast"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdTopKReserve},
	{name: "topk.add", arity: -3, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdTopKAdd},
	{name: "topk.incrby", arity: -4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdTopKIncrBy},
	{name: "topk.query", arity: -3, flags: []string{"readonly", "module"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdTopKQuery},
	{name: "topk.count", arity: -3, flags: []string{"readonly", "module"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdTopKCount},
	{name: "topk.list", arity: -2, flags: []string{"readonly", "module"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdTopKList},
	{name: "topk.info", arity: 2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdTopKInfo},
}

// errTopKIncr is RedisBloom's text, with the spaces its source's line
// continuation puts in the middle.
const errTopKIncr = "TopK: increment must be an integer greater or equal to 0                            and smaller or equal to 100,000"

// topkKey is the Top-K at key, or the error RedisBloom's GetTopKKey gives.
func (s *Server) topkKey(key []byte) (*topk.TopK, string) {
	e := s.db.GetBytes(key)
	if e == nil {
		return nil, "TopK: key does not exist"
	}
	if e.Kind != keyspace.KindTopK {
		return nil, errWrongType
	}
	return e.TopK(), ""
}

// cString is an item as a C string: up to its first NUL byte.
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// topkAllocBytes is what a new Top-K takes (its MemUsage when empty).
func topkAllocBytes(k, width, depth uint32) uint64 {
	return 8*uint64(width)*uint64(depth) + 32*uint64(k) + 2128
}

// TOPK.RESERVE key topk [width depth decay]
func cmdTopKReserve(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 3 && len(args) != 6 {
		r.Error(wrongArity("topk.reserve"))
		return
	}
	if s.db.GetBytes(args[1]) != nil {
		r.Error("TopK: key already exists")
		return
	}
	u32 := func(b []byte) (uint32, bool) {
		v, ok := resp.ParseInt(b)
		return uint32(v), ok && v >= 1 && v <= math.MaxUint32
	}
	k, ok := u32(args[2])
	if !ok {
		r.Error("TopK: invalid k")
		return
	}
	width, depth, decay := uint32(topk.DefaultWidth), uint32(topk.DefaultDepth), topk.DefaultDecay
	if len(args) == 6 {
		if width, ok = u32(args[3]); !ok {
			r.Error("TopK: invalid width")
			return
		}
		if depth, ok = u32(args[4]); !ok {
			r.Error("TopK: invalid depth")
			return
		}
		if decay, ok = resp.ParseFloat(args[5]); !ok || decay <= 0 || decay > 1 {
			r.Error("TopK: invalid decay value. must be '<= 1' & '> 0'")
			return
		}
	}
	const errNoMem = "ERR Insufficient memory to create topk data structure"
	if uint64(width)*uint64(depth) > topk.MaxBuckets {
		r.Error(errNoMem)
		return
	}
	n := topkAllocBytes(k, width, depth)
	if err := s.db.Allow(n); err != nil {
		r.Error(errNoMem)
		return
	}
	t, err := topk.New(k, width, depth, decay)
	if err != nil {
		s.db.Unaccount(n)
		r.Error(errNoMem)
		return
	}
	s.db.Put(string(args[1]), keyspace.NewTopK(t, 0))
	r.OK()
}

// topkAdded answers one item of TOPK.ADD or TOPK.INCRBY: the item it
// expelled from the list, or null.
func topkAdded(r *Reply, expelled []byte, ok bool) {
	if ok && expelled != nil {
		r.Bulk(cString(expelled))
	} else {
		r.Null()
	}
}

// TOPK.ADD key item [item ...]
func cmdTopKAdd(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("topk.add"))
		return
	}
	t, msg := s.topkKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	before := t.MemUsage()
	r.Array(len(args) - 2)
	for _, it := range args[2:] {
		e, ok := t.Add(it)
		topkAdded(r, e, ok)
	}
	s.db.Resized(before, t.MemUsage())
}

// TOPK.INCRBY key item increment [item increment ...]
//
// RedisBloom stops at the first increment out of range with an error in
// place of that item's answer, leaving the array it announced short (a
// reply a client cannot parse). Here the items from that one on are all
// answered with the error, so the reply is whole; the items before it are
// applied, as there, and the log gets the command with just them.
func cmdTopKIncrBy(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 4 || len(args)%2 == 1 {
		r.Error(wrongArity("topk.incrby"))
		return
	}
	t, msg := s.topkKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	before := t.MemUsage()
	n := (len(args) - 2) / 2
	r.Array(n)
	for i := range n {
		v, ok := resp.ParseInt(args[3+2*i])
		if !ok || v < 0 || v > 100000 {
			for range n - i {
				r.Error(errTopKIncr)
			}
			if i == 0 {
				c.skipLog = true
			} else {
				c.logArgs = args[:2+2*i]
			}
			break
		}
		e, added := t.IncrBy(args[2+2*i], uint32(v))
		topkAdded(r, e, added)
	}
	s.db.Resized(before, t.MemUsage())
}

// TOPK.QUERY key item [item ...]
func cmdTopKQuery(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("topk.query"))
		return
	}
	t, msg := s.topkKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	r.Array(len(args) - 2)
	for _, it := range args[2:] {
		r.Bool(t.Query(it))
	}
}

// TOPK.COUNT key item [item ...]
func cmdTopKCount(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("topk.count"))
		return
	}
	t, msg := s.topkKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	r.Array(len(args) - 2)
	for _, it := range args[2:] {
		r.Int(int64(t.Count(it)))
	}
}

// TOPK.LIST key [WITHCOUNT]. RedisBloom compares the option with
// strncasecmp over its own length: any prefix of WITHCOUNT, the empty
// string included, is taken for it.
func cmdTopKList(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 && len(args) != 3 {
		r.Error(wrongArity("topk.list"))
		return
	}
	withCount := false
	if len(args) == 3 {
		const word = "WITHCOUNT"
		if a := string(args[2]); len(a) <= len(word) && strings.EqualFold(a, word[:len(a)]) {
			withCount = true
		} else {
			r.Error("WITHCOUNT keyword expected")
			return
		}
	}
	t, msg := s.topkKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	list := t.List()
	if withCount {
		r.Array(2 * len(list))
	} else {
		r.Array(len(list))
	}
	for _, it := range list {
		r.Bulk(cString(it.Item))
		if withCount {
			r.Int(int64(it.Count))
		}
	}
}

// TOPK.INFO key
func cmdTopKInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity("topk.info"))
		return
	}
	t, msg := s.topkKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	r.Map(4)
	r.Simple("k")
	r.Int(int64(t.K()))
	r.Simple("width")
	r.Int(int64(t.Width()))
	r.Simple("depth")
	r.Int(int64(t.Depth()))
	r.Simple("decay")
	r.Double(t.Decay())
}
