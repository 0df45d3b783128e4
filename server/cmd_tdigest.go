package server

// RedisBloom's t-digest commands (TDIGEST.*), answering as RedisBloom does:
// its argument checks, error texts, reply shapes, and the answers of the
// same digest (package tdigest follows its library). A query merges the
// digest's buffer first, as RedisBloom's do; what a command did is what is
// logged, so a query that merged the buffer is logged too (as the
// smallest query that merges it, TDIGEST.CDF key 0), and replay and
// replicas hold a digest equal bit for bit. A read-only replica answers
// from a merged copy and leaves its own digest as its master's stream
// makes it, and so does a server whose log has failed.

import (
	"math"

	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
	"github.com/bloomkit/bloomkit/tdigest"
)

const (
	errTDNotFound = "ERR T-Digest: key does not exist"
	errTDExists   = "ERR T-Digest: key already exists"
)

// tdigestCommands are RedisBloom's TDIGEST.* commands, in the command
// table after the others.
var tdigestCommands = tdigestCommandList()

func tdigestCommandList() []*command {
	w := []string{"write", "denyoom", "module"}
	ro := []string{"readonly", "module"}
	return []*command{
		{name: "tdigest.create", arity: -2, flags: w, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdTDCreate},
		{name: "tdigest.add", arity: -3, flags: w, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdTDAdd},
		{name: "tdigest.reset", arity: 2, flags: w, first: 1, last: 1, step: 1, write: true, checkOwn: true, fn: cmdTDReset},
		{name: "tdigest.merge", arity: -4, flags: w, first: 1, last: 1, step: 1, write: true, checkOwn: true, keys: tdMergeKeys, fn: cmdTDMerge},
		{name: "tdigest.min", arity: 2, flags: ro, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdTDMinMax},
		{name: "tdigest.max", arity: 2, flags: ro, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdTDMinMax},
		{name: "tdigest.quantile", arity: -3, flags: ro, first: 1, last: 1, step: 1, layout: true, checkOwn: true, fn: cmdTDQuantile},
		{name: "tdigest.cdf", arity: -3, flags: ro, first: 1, last: 1, step: 1, layout: true, checkOwn: true, fn: cmdTDCDF},
		{name: "tdigest.rank", arity: -3, flags: ro, first: 1, last: 1, step: 1, layout: true, checkOwn: true, fn: cmdTDRank},
		{name: "tdigest.revrank", arity: -3, flags: ro, first: 1, last: 1, step: 1, layout: true, checkOwn: true, fn: cmdTDRank},
		{name: "tdigest.byrank", arity: -3, flags: ro, first: 1, last: 1, step: 1, layout: true, checkOwn: true, fn: cmdTDByRank},
		{name: "tdigest.byrevrank", arity: -3, flags: ro, first: 1, last: 1, step: 1, layout: true, checkOwn: true, fn: cmdTDByRank},
		{name: "tdigest.trimmed_mean", arity: 4, flags: ro, first: 1, last: 1, step: 1, layout: true, checkOwn: true, fn: cmdTDTrimmedMean},
		{name: "tdigest.info", arity: 2, flags: ro, first: 1, last: 1, step: 1, checkOwn: true, fn: cmdTDInfo},
	}
}

// COMMAND DOCS entries and ACL categories, as RedisBloom 8 registers them
// (each also in @tdigest).
func init() {
	key := cmdArg{name: "key", typ: "key", keySpec: 0}
	many := func(name, typ string) cmdArg { return cmdArg{name: name, typ: typ, keySpec: -1, multiple: true} }
	one := func(name, typ string) cmdArg { return cmdArg{name: name, typ: typ, keySpec: -1} }
	comp := cmdArg{name: "compression", typ: "block", keySpec: -1, token: "COMPRESSION", optional: true, sub: []cmdArg{one("compression", "integer")}}
	docs := map[string]cmdDoc{
		"tdigest.create":       {categories: "write fast tdigest", summary: "Allocates memory and initializes a new t-digest sketch", complexity: "O(1)", arity: -2, keyFlag: "RW", args: []cmdArg{key, comp}},
		"tdigest.add":          {categories: "write tdigest", summary: "Adds one or more observations to a t-digest sketch", complexity: "O(N), where N is the number of samples to add", arity: -3, keyFlag: "RW", args: []cmdArg{key, many("value", "double")}},
		"tdigest.reset":        {categories: "write fast tdigest", summary: "Resets a t-digest sketch: empty the sketch and re-initializes it.", complexity: "O(1)", arity: 2, keyFlag: "RW", args: []cmdArg{key}},
		"tdigest.merge":        {categories: "write tdigest", summary: "Merges multiple t-digest sketches into a single sketch", complexity: "O(N*K), where N is the number of centroids and K being the number of input sketches", arity: -4, keyFlag: "RW", args: []cmdArg{{name: "destination-key", typ: "key", keySpec: 0}, one("numkeys", "integer"), {name: "source-key", typ: "key", keySpec: 1, multiple: true}, comp, {name: "override", typ: "pure-token", keySpec: -1, token: "OVERRIDE", optional: true}}},
		"tdigest.min":          {categories: "read fast tdigest", summary: "Returns the minimum observation value from a t-digest sketch", complexity: "O(1)", arity: 2, keyFlag: "RO", args: []cmdArg{key}},
		"tdigest.max":          {categories: "read fast tdigest", summary: "Returns the maximum observation value from a t-digest sketch", complexity: "O(1)", arity: 2, keyFlag: "RO", args: []cmdArg{key}},
		"tdigest.quantile":     {categories: "read fast tdigest", summary: "Returns, for each input fraction, an estimation of the value (floating point) that is smaller than the given fraction of observations", complexity: "O(N) where N is the number of quantiles specified.", arity: -3, keyFlag: "RO", args: []cmdArg{key, many("quantile", "double")}},
		"tdigest.byrank":       {categories: "read fast tdigest", summary: "Returns, for each input rank, an estimation of the value (floating-point) with that rank", complexity: "O(N) where N is the number of ranks specified.", arity: -3, keyFlag: "RO", args: []cmdArg{key, many("rank", "double")}},
		"tdigest.byrevrank":    {categories: "read fast tdigest", summary: "Returns, for each input reverse rank, an estimation of the value (floating-point) with that reverse rank", complexity: "O(N) where N is the number of reverse ranks specified.", arity: -3, keyFlag: "RO", args: []cmdArg{key, many("reverse_rank", "double")}},
		"tdigest.rank":         {categories: "read fast tdigest", summary: "Returns, for each input value (floating-point), the estimated rank of the value (the number of observations in the sketch that are smaller than the value + half the number of observations that are equal to the value)", complexity: "O(N) where N is the number of values specified.", arity: -3, keyFlag: "RO", args: []cmdArg{key, many("value", "double")}},
		"tdigest.revrank":      {categories: "read fast tdigest", summary: "Returns, for each input value (floating-point), the estimated reverse rank of the value (the number of observations in the sketch that are larger than the value + half the number of observations that are equal to the value)", complexity: "O(N) where N is the number of values specified.", arity: -3, keyFlag: "RO", args: []cmdArg{key, many("value", "double")}},
		"tdigest.cdf":          {categories: "read fast tdigest", summary: "Returns, for each input value, an estimation of the fraction (floating-point) of (observations smaller than the given value + half the observations equal to the given value)", complexity: "O(N) where N is the number of values specified.", arity: -3, keyFlag: "RO", args: []cmdArg{key, many("value", "double")}},
		"tdigest.trimmed_mean": {categories: "read tdigest", summary: "Returns an estimation of the mean value from the sketch, excluding observation values outside the low and high cutoff quantiles", complexity: "O(N) where N is the number of centroids", arity: 4, keyFlag: "RO", args: []cmdArg{key, one("low_cut_quantile", "double"), one("high_cut_quantile", "double")}},
		"tdigest.info":         {categories: "read fast tdigest", summary: "Returns information and statistics about a t-digest sketch", complexity: "O(1)", arity: 2, keyFlag: "RO", tips: []string{"dont_cache"}, args: []cmdArg{key}},
	}
	for name, d := range docs {
		d.group, d.since = "module", "2.4.0"
		commandDocs[name] = d
	}
}

// tdMergeKeys: TDIGEST.MERGE's destination (written) and its numkeys
// sources (read).
func tdMergeKeys(args [][]byte, visit func(int, acl.Perm)) {
	if len(args) < 2 {
		return
	}
	visit(1, acl.Read|acl.Write)
	if len(args) < 3 {
		return
	}
	n, ok := resp.ParseInt(args[2])
	if !ok || n < 1 {
		return
	}
	for i := 3; i < len(args) && int64(i-3) < n; i++ {
		visit(i, acl.Read)
	}
}

// tdKey finds key's digest; on failure it answers RedisBloom's error.
func (s *Server) tdKey(key []byte, r *Reply) *tdigest.Digest {
	e := s.db.GetBytes(key)
	if e == nil {
		r.Error(errTDNotFound)
		return nil
	}
	if e.Kind != keyspace.KindTDigest {
		r.Error(errWrongType)
		return nil
	}
	return e.TD()
}

// tdQuery gives a query the digest to ask. On a master the query merges
// the live digest's buffer, as RedisBloom's does, and when it does the
// merge is logged (see the top of this file) after the snapshot and the
// memory recount were told of the change. A read-only replica's client
// asks a merged copy: the replica's digest changes only by its master's
// stream.
func (s *Server) tdQuery(c *Session, key []byte, d *tdigest.Digest) *tdigest.Digest {
	if !tdNeedsMerge(d) {
		return d
	}
	if s.isReplica() && !c.fromMaster && !s.db.Loading() || s.aof != nil && s.aof.Failed() {
		// A failed log takes no record: a query then leaves the digest
		// as it is, like a read-only replica.
		return d.Clone()
	}
	if s.db.Snapshotting() {
		if e := s.db.Lookup(string(key)); e != nil {
			s.db.Preserve(e)
		}
	}
	if s.db.Recounting() {
		s.db.Touch(key)
	}
	_ = d.Compress()
	c.logArgs = [][]byte{[]byte("TDIGEST.CDF"), key, []byte("0")}
	return d
}

// saveInForeground is a save that Redis makes in its own process (SAVE,
// SHUTDOWN, DEBUG RELOAD; not BGSAVE, whose child saves a copy): as
// RedisBloom's RDB save merges the buffer of the live digest it saves,
// the buffers of the t-digests are merged first (mergeDigestsForSave), so
// that TDIGEST.INFO after the save, and after a restart from it, is what
// Redis with RedisBloom reports.
func (s *Server) saveInForeground() error {
	s.mergeDigestsForSave()
	return s.Save()
}

// mergeDigestsForSave merges the buffer of every t-digest that a query
// would merge, logging each merge as a query's is (TDIGEST.CDF key 0) so
// that replay and replicas stay exact. A replica leaves its digests as its
// master's stream made them, and a failed log takes no record, as for a
// query (tdQuery). The keyspace is walked a chunk per hold of its lock, so
// that other clients are served meanwhile, as they are during the save.
func (s *Server) mergeDigestsForSave() {
	for cursor := uint64(0); ; {
		if s.isReplica() || s.aof != nil && s.aof.Failed() {
			return
		}
		s.db.Lock()
		if s.db.Loading() {
			s.db.Unlock()
			return
		}
		cursor = s.db.Scan(cursor, 1024, func(key string, e *keyspace.Entry) {
			if e.Kind != keyspace.KindTDigest || !tdNeedsMerge(e.TD()) {
				return
			}
			if s.db.Snapshotting() {
				s.db.Preserve(e)
			}
			k := []byte(key)
			if s.db.Recounting() {
				s.db.Touch(k)
			}
			_ = e.TD().Compress()
			s.db.Changed()
			s.record([][]byte{[]byte("TDIGEST.CDF"), k, []byte("0")})
		})
		s.db.Unlock()
		if cursor == 0 {
			return
		}
	}
}

// tdNeedsMerge reports whether a query would change d: values wait in its
// buffer and it holds more than one (RedisBloom's library leaves a lone
// value unmerged).
func tdNeedsMerge(d *tdigest.Digest) bool {
	in := d.Info()
	return in.UnmergedNodes > 0 && d.Count() > 1
}

func (s *Server) newTDigest(compression int64, r *Reply) *tdigest.Digest {
	if compression > tdigest.MaxCompression {
		r.Error("ERR T-Digest: allocation failed")
		return nil
	}
	if err := s.db.Allow(uint64(8 + 16*tdigest.Capacity(int(compression)))); err != nil {
		r.Error("ERR T-Digest: allocation failed")
		return nil
	}
	d, err := tdigest.New(int(compression))
	if err != nil {
		r.Error("ERR T-Digest: allocation failed")
		return nil
	}
	return d
}

func parseCompression(b []byte, r *Reply) (int64, bool) {
	c, ok := resp.ParseInt(b)
	if !ok {
		r.Error("ERR T-Digest: error parsing compression parameter")
		return 0, false
	}
	if c <= 0 {
		r.Error("ERR T-Digest: compression parameter needs to be a positive integer")
		return 0, false
	}
	return c, true
}

// TDIGEST.CREATE key [COMPRESSION compression]
func cmdTDCreate(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 && len(args) != 4 {
		r.Error(wrongArity("tdigest.create"))
		return
	}
	if e := s.db.GetBytes(args[1]); e != nil {
		if e.Kind == keyspace.KindTDigest {
			r.Error(errTDExists)
		} else {
			r.Error(errWrongType)
		}
		return
	}
	compression := int64(tdigest.DefaultCompression)
	if len(args) == 4 {
		if argIndex(args[1:], "COMPRESSION") == -1 {
			r.Error("ERR T-Digest: wrong keyword")
			return
		}
		var ok bool
		if compression, ok = parseCompression(args[3], r); !ok {
			return
		}
	}
	d := s.newTDigest(compression, r)
	if d == nil {
		return
	}
	s.db.Put(string(args[1]), keyspace.NewTDigest(d, 0))
	r.OK()
}

// TDIGEST.RESET key
func cmdTDReset(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity("tdigest.reset"))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	d.Reset()
	r.OK()
}

// TDIGEST.ADD key value [value ...]: all values are checked before any is
// added.
func cmdTDAdd(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("tdigest.add"))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	vals := make([]float64, len(args)-2)
	for i, a := range args[2:] {
		v, ok := resp.ParseFloat(a)
		if !ok {
			r.Error("ERR T-Digest: error parsing val parameter")
			return
		}
		if math.IsInf(v, 0) {
			r.Error("ERR T-Digest: val parameter needs to be a finite number")
			return
		}
		vals[i] = v
	}
	for i, v := range vals {
		if err := d.Add(v); err != nil {
			if i > 0 {
				// What was added stays, as in RedisBloom: log it.
				c.logArgs = args[:2+i]
			} else {
				c.skipLog = true
			}
			r.Error("ERR T-Digest: overflow detected")
			return
		}
	}
	r.OK()
}

// TDIGEST.MERGE dest numkeys src [src ...] [COMPRESSION c] [OVERRIDE]
func cmdTDMerge(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 4 {
		r.Error(wrongArity("tdigest.merge"))
		return
	}
	var start *tdigest.Digest
	// RedisBloom opens the destination for reading first, and each
	// source other than it: lookups that count as hits or misses.
	if e := s.db.ReadLookup(args[1]); e != nil {
		if e.Kind != keyspace.KindTDigest {
			r.Error(errWrongType)
			return
		}
		start = e.TD()
	}
	numkeys, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error("ERR T-Digest: error parsing numkeys")
		return
	}
	if numkeys <= 0 {
		r.Error("ERR T-Digest: numkeys needs to be a positive integer")
		return
	}
	if numkeys > int64(len(args)-3) {
		r.Error(wrongArity("tdigest.merge"))
		return
	}
	var compression int64
	useMax := start == nil
	if start != nil {
		compression = int64(start.Compression())
	}
	override := false
	rest := 3 + int(numkeys)
	if rest < len(args) {
		tail := args[rest-1:] // argIndex looks from index 1
		cl := argIndex(tail, "COMPRESSION")
		if cl > -1 {
			useMax = false
			if rest+cl >= len(args) {
				r.Error(wrongArity("tdigest.merge"))
				return
			}
			if compression, ok = parseCompression(args[rest+cl], r); !ok {
				return
			}
		}
		if argIndex(tail, "OVERRIDE") > -1 {
			override = true
			if cl == -1 {
				useMax, compression = true, 0
			}
		}
		if cl == -1 && !override {
			r.Error("ERR T-Digest: wrong keyword")
			return
		}
	}
	from := make([]*tdigest.Digest, numkeys)
	for i := range from {
		k := args[3+i]
		if string(k) != string(args[1]) {
			s.db.ReadLookup(k) // counted; tdKey looks again, uncounted
			if from[i] = s.tdKey(k, r); from[i] == nil {
				return
			}
		} else if start != nil {
			from[i] = start
		} else {
			r.Error(errTDNotFound)
			return
		}
		if useMax {
			compression = max(compression, int64(from[i].Compression()))
		}
	}
	// A total past an int64 fails before anything changes (RedisBloom
	// fails part-way, after merging some buffers, which a replica would
	// not see).
	var total int64
	parts := from
	if start != nil && !override {
		parts = append([]*tdigest.Digest{start}, from...)
	}
	for _, f := range parts {
		if total > math.MaxInt64-f.Count() {
			r.Error("ERR T-Digest: overflow detected")
			return
		}
		total += f.Count()
	}
	// The sources' buffers are merged (as RedisBloom's td_merge does):
	// tell the snapshot and the recount before they change.
	for i := range from {
		if s.db.Snapshotting() {
			if e := s.db.Lookup(string(args[3+i])); e != nil {
				s.db.Preserve(e)
			}
		}
		if s.db.Recounting() {
			s.db.Touch(args[3+i])
		}
	}
	to := s.newTDigest(compression, r)
	if to == nil {
		return
	}
	var err error
	if start != nil && !override {
		err = to.Merge(start)
	}
	for _, f := range from {
		if err == nil {
			err = to.Merge(f)
		}
	}
	if err != nil {
		s.db.Unaccount(uint64(to.MemoryUsage())) // counted by newTDigest
		r.Error("ERR T-Digest: overflow detected")
		return
	}
	s.db.Put(string(args[1]), keyspace.NewTDigest(to, 0))
	r.OK()
}

// TDIGEST.MIN key, TDIGEST.MAX key
func cmdTDMinMax(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity(string(lower(args[0]))))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	if string(lower(args[0])) == "tdigest.min" {
		r.Double(d.Min())
	} else {
		r.Double(d.Max())
	}
}

func lower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return out
}

// TDIGEST.QUANTILE key q [q ...]
func cmdTDQuantile(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("tdigest.quantile"))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	qs := make([]float64, len(args)-2)
	for i, a := range args[2:] {
		q, ok := resp.ParseFloat(a)
		if !ok {
			r.Error("ERR T-Digest: error parsing quantile")
			return
		}
		if q < 0 || q > 1 {
			r.Error("ERR T-Digest: quantile should be in [0,1]")
			return
		}
		qs[i] = q
	}
	out := s.tdQuery(c, args[1], d).Quantiles(qs, nil)
	r.Array(len(out))
	for _, v := range out {
		r.Double(v)
	}
}

// TDIGEST.CDF key value [value ...]
func cmdTDCDF(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 {
		r.Error(wrongArity("tdigest.cdf"))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	xs, ok := tdFloats(args[2:], "ERR T-Digest: error parsing cdf", r)
	if !ok {
		return
	}
	q := s.tdQuery(c, args[1], d)
	r.Array(len(xs))
	for _, x := range xs {
		r.Double(q.CDF(x))
	}
}

// TDIGEST.RANK key value [value ...], TDIGEST.REVRANK
func cmdTDRank(s *Server, c *Session, args [][]byte, r *Reply) {
	name := string(lower(args[0]))
	if len(args) < 3 {
		r.Error(wrongArity(name))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	xs, ok := tdFloats(args[2:], "ERR T-Digest: error parsing value", r)
	if !ok {
		return
	}
	q := s.tdQuery(c, args[1], d)
	r.Array(len(xs))
	for _, x := range xs {
		if name == "tdigest.revrank" {
			r.Int(q.RevRank(x))
		} else {
			r.Int(q.Rank(x))
		}
	}
}

// TDIGEST.BYRANK key rank [rank ...], TDIGEST.BYREVRANK
func cmdTDByRank(s *Server, c *Session, args [][]byte, r *Reply) {
	name := string(lower(args[0]))
	if len(args) < 3 {
		r.Error(wrongArity(name))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	ranks := make([]int64, len(args)-2)
	for i, a := range args[2:] {
		n, ok := resp.ParseInt(a)
		if !ok {
			r.Error("ERR T-Digest: error parsing rank")
			return
		}
		if n < 0 {
			r.Error("ERR T-Digest: rank needs to be non negative")
			return
		}
		ranks[i] = n
	}
	q := s.tdQuery(c, args[1], d)
	r.Array(len(ranks))
	for _, n := range ranks {
		if name == "tdigest.byrevrank" {
			r.Double(q.ByRevRank(n))
		} else {
			r.Double(q.ByRank(n))
		}
	}
}

// TDIGEST.TRIMMED_MEAN key low high
func cmdTDTrimmedMean(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 4 {
		r.Error(wrongArity("tdigest.trimmed_mean"))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	lo, ok := resp.ParseFloat(args[2])
	if !ok {
		r.Error("ERR T-Digest: error parsing low_cut_percentile")
		return
	}
	hi, ok := resp.ParseFloat(args[3])
	if !ok {
		r.Error("ERR T-Digest: error parsing high_cut_percentile")
		return
	}
	if lo < 0 || lo > 1 || hi < 0 || hi > 1 {
		r.Error("ERR T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]")
		return
	}
	if lo >= hi {
		r.Error("ERR T-Digest: low_cut_percentile should be lower than high_cut_percentile")
		return
	}
	r.Double(s.tdQuery(c, args[1], d).TrimmedMean(lo, hi))
}

// TDIGEST.INFO key
func cmdTDInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity("tdigest.info"))
		return
	}
	d := s.tdKey(args[1], r)
	if d == nil {
		return
	}
	in := d.Info()
	r.Map(9)
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"Compression", int64(in.Compression)},
		{"Capacity", int64(in.Capacity)},
		{"Merged nodes", int64(in.MergedNodes)},
		{"Unmerged nodes", int64(in.UnmergedNodes)},
		{"Merged weight", in.MergedWeight},
		{"Unmerged weight", in.UnmergedWeight},
		{"Observations", in.MergedWeight + in.UnmergedWeight},
		{"Total compressions", in.TotalCompressions},
		{"Memory usage", int64(d.MemoryUsage())},
	} {
		r.Simple(f.name)
		r.Int(f.v)
	}
}

// tdFloats parses a TDIGEST command's numbers, answering msg for the first
// that is not one.
func tdFloats(args [][]byte, msg string, r *Reply) ([]float64, bool) {
	xs := make([]float64, len(args))
	for i, a := range args {
		x, ok := resp.ParseFloat(a)
		if !ok {
			r.Error(msg)
			return nil, false
		}
		xs[i] = x
	}
	return xs, true
}
