package server

import (
	"math"
	"strings"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// RedisBloom's Count-Min Sketch commands, answering as RedisBloom 8 does
// (src/rm_cms.c): the same checks in the same order, the same error texts
// (prefixed "CMS: ", without "ERR"), the same replies. Every one of them
// is deterministic, so each is logged as it was sent.

var cmsCommands = []*command{
	{name: "cms.initbydim", arity: 4, flags: []string{"write", "denyoom", "module", "fast"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCMSInit},
	{name: "cms.initbyprob", arity: 4, flags: []string{"write", "denyoom", "module", "fast"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCMSInit},
	{name: "cms.incrby", arity: -4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdCMSIncrBy},
	{name: "cms.query", arity: -3, flags: []string{"readonly", "module"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdCMSQuery},
	{name: "cms.merge", arity: -4, flags: []string{"write", "denyoom", "module"}, first: 1, last: 1, step: 1, write: true, checkOwn: true, keys: cmsMergeKeys, fn: cmdCMSMerge},
	{name: "cms.info", arity: 2, flags: []string{"readonly", "module", "fast"}, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdCMSInfo},
}

const (
	errCMSMissing = "CMS: key does not exist"
	errCMSNoMem   = "CMS: Insufficient memory to create the key"
)

// cmsMergeKeys: CMS.MERGE writes its destination and reads its sources
// (as many as numkeys says, when it parses).
func cmsMergeKeys(args [][]byte, visit func(int, acl.Perm)) {
	if len(args) < 2 {
		return
	}
	visit(1, acl.Write)
	if len(args) < 3 {
		return
	}
	n, ok := resp.ParseInt(args[2])
	if !ok || n <= 0 {
		return
	}
	for i := 3; i < len(args) && int64(i-3) < n; i++ {
		visit(i, acl.Read)
	}
}

// cmsKey is the sketch at key, or the error RedisBloom's GetCMSKey gives.
func (s *Server) cmsKey(key []byte) (*cms.Sketch, string) {
	_, sk, msg := s.cmsEntry(key)
	return sk, msg
}

// cmsEntry is cmsKey with the key's entry.
func (s *Server) cmsEntry(key []byte) (*keyspace.Entry, *cms.Sketch, string) {
	e := s.db.GetBytes(key)
	if e == nil {
		return nil, nil, errCMSMissing
	}
	if e.Kind != keyspace.KindCMS {
		return nil, nil, errWrongType
	}
	return e, e.CMS(), ""
}

// cmsDims is CMS.INITBYPROB's CMS_DimFromProb with C's conversions: a
// width or depth past the range of a long long comes out negative there,
// which the caller refuses as invalid.
func cmsDims(overEst, prob float64) (width, depth int64) {
	w := math.Ceil(2 / overEst)
	lp := float32(math.Log10(float64(float32(prob))))
	d := math.Ceil(float64(lp / float32(math.Log10(0.5))))
	if !(w < 1<<63) || !(d < 1<<63) {
		return -1, -1
	}
	return int64(w), int64(d)
}

// CMS.INITBYDIM key width depth | CMS.INITBYPROB key error probability
func cmdCMSInit(s *Server, c *Session, args [][]byte, r *Reply) {
	name := strings.ToLower(string(args[0]))
	if len(args) != 4 {
		r.Error(wrongArity(name))
		return
	}
	if s.db.GetBytes(args[1]) != nil {
		r.Error("CMS: key already exists")
		return
	}
	var width, depth int64
	if name == "cms.initbydim" {
		var ok bool
		if width, ok = resp.ParseInt(args[2]); !ok || width < 1 {
			r.Error("CMS: invalid width")
			return
		}
		if depth, ok = resp.ParseInt(args[3]); !ok || depth < 1 {
			r.Error("CMS: invalid depth")
			return
		}
	} else {
		overEst, ok := resp.ParseFloat(args[2])
		if !ok || overEst <= 0 || overEst >= 1 {
			r.Error("CMS: invalid overestimation value")
			return
		}
		prob, ok := resp.ParseFloat(args[3])
		if !ok || prob <= 0 || prob >= 1 {
			r.Error("CMS: invalid prob value")
			return
		}
		width, depth = cmsDims(overEst, prob)
	}
	if width < 1 || depth < 1 || width > math.MaxInt64/depth {
		r.Error("CMS: invalid init arguments")
		return
	}
	w, d := uint64(width), uint64(depth)
	if w > cms.MaxCells/d {
		r.Error(errCMSNoMem)
		return
	}
	if err := s.db.Allow(keyspace.SketchAllocBytes(w, d)); err != nil {
		r.Error(errCMSNoMem)
		return
	}
	sk, err := cms.New(w, d)
	if err != nil {
		s.db.Unaccount(keyspace.SketchAllocBytes(w, d))
		r.Error(errCMSNoMem)
		return
	}
	s.db.Put(string(args[1]), keyspace.NewCMS(sk, 0))
	r.OK()
}

// CMS.INCRBY key item increment [item increment ...]
func cmdCMSIncrBy(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 4 || len(args)%2 == 1 {
		r.Error(wrongArity("cms.incrby"))
		return
	}
	e, sk, msg := s.cmsEntry(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	n := (len(args) - 2) / 2
	incr := make([]int64, n)
	for i := range n {
		v, ok := resp.ParseInt(args[3+2*i])
		if !ok {
			r.Error("CMS: Cannot parse number")
			return
		}
		if v < 0 {
			r.Error("CMS: Number cannot be negative")
			return
		}
		incr[i] = v
	}
	r.Array(n)
	g := e.SketchGuard()
	for i := range n {
		if g != nil {
			// A running snapshot first copies what it still needs.
			view := keyspace.CounterBytes(sk)
			for row := range sk.Depth() {
				g.Write(view, int(4*sk.Index(args[2+2*i], row)), 4)
			}
		}
		if est := sk.IncrBy(args[2+2*i], uint64(incr[i])); est != math.MaxUint32 {
			r.Int(int64(est))
		} else {
			r.Error("CMS: INCRBY overflow")
		}
	}
}

// CMS.QUERY key item [item ...]
func cmdCMSQuery(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("cms.query"))
		return
	}
	sk, msg := s.cmsKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	r.Array(len(args) - 2)
	for _, it := range args[2:] {
		r.Int(int64(sk.Query(it)))
	}
}

// CMS.MERGE destination numKeys source [source ...] [WEIGHTS weight [weight ...]]
func cmdCMSMerge(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 4 {
		r.Error(wrongArity("cms.merge"))
		return
	}
	de, dest, msg := s.cmsEntry(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	numKeys, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error("CMS: invalid numkeys")
		return
	}
	rest := args[3:]
	if numKeys <= 0 {
		r.Error("CMS: Number of keys must be positive")
		return
	}
	pos := -1
	for i, a := range rest {
		if strings.EqualFold(string(a), "WEIGHTS") {
			pos = i
			break
		}
	}
	if pos < 0 {
		if numKeys != int64(len(rest)) {
			r.Error("CMS: wrong number of keys")
			return
		}
	} else if int64(pos) != numKeys || int64(len(rest)) != 1+numKeys*2 {
		r.Error("CMS: wrong number of keys/weights")
		return
	}
	srcs := make([]*cms.Sketch, numKeys)
	ents := make([]*keyspace.Entry, numKeys)
	weights := make([]int64, numKeys)
	for i := range numKeys {
		weights[i] = 1
		if pos >= 0 {
			if weights[i], ok = resp.ParseInt(rest[numKeys+1+i]); !ok {
				r.Error("CMS: invalid weight value")
				return
			}
		}
		// RedisBloom opens each source for reading: a hit or a miss.
		s.db.ReadLookup(rest[i])
		if ents[i], srcs[i], msg = s.cmsEntry(rest[i]); msg != "" {
			r.Error(msg)
			return
		}
		if srcs[i].Width() != dest.Width() || srcs[i].Depth() != dest.Depth() {
			r.Error("CMS: width/depth is not equal")
			return
		}
	}
	m, err := dest.PrepareMerge(srcs, weights)
	if err != nil {
		r.Error("CMS: MERGE overflow")
		return
	}
	// Checked, the merge cannot fail: it takes effect now, and its
	// counters are written as BF.MERGE ORs its bits (in the background
	// when large, internal/keyspace/merge.go).
	s.runMerge(c, keyspace.CMSMergeJob(de, ents, m))
	r.OK()
}

// CMS.INFO key
func cmdCMSInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity("cms.info"))
		return
	}
	sk, msg := s.cmsKey(args[1])
	if msg != "" {
		r.Error(msg)
		return
	}
	r.Map(3)
	r.Simple("width")
	r.Int(int64(sk.Width()))
	r.Simple("depth")
	r.Int(int64(sk.Depth()))
	r.Simple("count")
	r.Int(int64(sk.Count()))
}
