package server

import (
	"strconv"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

func (s *Server) createCuckoo(key []byte, capacity uint64, bucketSize, maxIter, expansion uint16) (*redisbloom.Cuckoo, string) {
	if capacity < 2*uint64(bucketSize) {
		return nil, "ERR Could not create filter"
	}
	n := redisbloom.CuckooCreateBytes(capacity, bucketSize)
	if err := s.db.Allow(n); err != nil {
		return nil, errNoMemory
	}
	s.db.Unaccount(n) // NewCuckoo's own allow call counts it again
	cf, err := redisbloom.NewCuckoo(capacity, bucketSize, maxIter, expansion, s.db.AllowFn())
	if err != nil {
		return nil, errNoMemory
	}
	s.db.Put(string(key), &keyspace.Entry{Kind: keyspace.KindCuckoo, CF: cf})
	return cf, ""
}

// CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION x]
func cmdCFReserve(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) < 3 || len(args)%2 == 0 {
		r.Error(wrongArity("cf.reserve"))
		return
	}
	capacity, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error("Bad capacity")
		return
	}
	opt := func(name string, def, lo, hi int64) (int64, bool) {
		loc := argIndex(args, name)
		if loc == -1 {
			return def, true
		}
		if loc+1 >= len(args) {
			r.Error("Couldn't parse " + name)
			return 0, false
		}
		v, ok := resp.ParseInt(args[loc+1])
		if !ok {
			r.Error("Couldn't parse " + name)
			return 0, false
		}
		if v < lo || v > hi {
			r.Error(name + ": value must be in the range [" + itoa(lo) + ", " + itoa(hi) + "]")
			return 0, false
		}
		return v, true
	}
	fc := s.filterConfig()
	maxIter, ok := opt("MAXITERATIONS", fc.int(fpCFMaxIterations), 1, 65535)
	if !ok {
		return
	}
	bucketSize, ok := opt("BUCKETSIZE", fc.int(fpCFBucketSize), 1, fc.cfBucketMax)
	if !ok {
		return
	}
	expansion, ok := opt("EXPANSION", fc.int(fpCFExpansion), 0, 32768)
	if !ok {
		return
	}
	if bucketSize*2 > capacity || capacity > cfMaxCapacity {
		r.Error("Capacity must be in the range [2 * BUCKETSIZE, 1073741824]")
		return
	}
	if !fc.cuckooDefaults() {
		// Some option came from the filter parameters: log them all.
		c.logArgs = cfReserveArgs(args[1], capacity, bucketSize, maxIter, expansion)
	}
	if _, st := s.cuckooKey(args[1]); st != stEmpty {
		r.Error(statusErr(st))
		return
	}
	if _, msg := s.createCuckoo(args[1], uint64(capacity), uint16(bucketSize), uint16(maxIter), uint16(expansion)); msg != "" {
		r.Error(msg)
		return
	}
	r.OK()
}

type cfInsertOpts struct {
	nx, autocreate, multi bool
	capacity              int64
	// What a filter is created with: the parameters in force.
	bucketSize, maxIter, expansion, maxExpansions int64
	// logCreate: they are not RedisBloom's defaults, so a filter this
	// command creates is logged with them.
	logCreate bool
}

// defaultCFOpts are CF.ADD's and CF.INSERT's options before the
// command's own.
func (s *Server) defaultCFOpts(nx, multi bool) cfInsertOpts {
	fc := s.filterConfig()
	return cfInsertOpts{nx: nx, multi: multi, autocreate: true, capacity: fc.int(fpCFInitialSize),
		bucketSize: fc.int(fpCFBucketSize), maxIter: fc.int(fpCFMaxIterations), expansion: fc.int(fpCFExpansion),
		maxExpansions: fc.int(fpCFMaxExpansions), logCreate: !fc.cuckooDefaults()}
}

// cfReserveArgs is the CF.RESERVE that creates a filter with these options.
func cfReserveArgs(key []byte, capacity, bucketSize, maxIter, expansion int64) [][]byte {
	return [][]byte{[]byte("CF.RESERVE"), key, []byte(strconv.FormatInt(capacity, 10)),
		[]byte("BUCKETSIZE"), []byte(strconv.FormatInt(bucketSize, 10)),
		[]byte("MAXITERATIONS"), []byte(strconv.FormatInt(maxIter, 10)),
		[]byte("EXPANSION"), []byte(strconv.FormatInt(expansion, 10))}
}

// cfInsertCommon adds items to key (CF.ADD, CF.ADDNX, CF.INSERT,
// CF.INSERTNX); args is the command and items its tail. An item that
// fails (full, or refused by --maxmemory) changes nothing (the eviction
// loop is undone), and the log gets the command without it: a replay
// ignores the memory limit and would otherwise insert it.
func (s *Server) cfInsertCommon(c *Session, args, items [][]byte, o cfInsertOpts, r *Reply) {
	key := args[1]
	cf, st := s.cuckooKey(key)
	created := false
	if st == stEmpty && o.autocreate {
		var msg string
		if cf, msg = s.createCuckoo(key, uint64(o.capacity), uint16(o.bucketSize), uint16(o.maxIter), uint16(o.expansion)); msg != "" {
			r.Error(msg)
			return
		}
		created = true
	} else if st != stOK {
		r.Error(statusErr(st))
		return
	}
	if int64(len(cf.Filters)) >= o.maxExpansions {
		r.Error("Maximum expansions reached")
		return
	}
	if o.multi {
		r.Array(len(items))
	}
	// RESP3 booleans for CF.ADD, CF.ADDNX and CF.INSERT; CF.INSERTNX keeps integers.
	boolReply := r.w.RESP3() && (!o.nx || !o.multi)
	var logged [][]byte // the command with the items that did not fail, once one failed
	for i, it := range items {
		var res redisbloom.InsertStatus
		if o.nx {
			res = cf.InsertUnique(it)
		} else {
			res = cf.Insert(it)
		}
		if res != redisbloom.Inserted && res != redisbloom.Exists && logged == nil {
			logged = append([][]byte(nil), args[:len(args)-len(items)+i]...)
		} else if logged != nil && (res == redisbloom.Inserted || res == redisbloom.Exists) {
			logged = append(logged, it)
		}
		switch res {
		case redisbloom.Inserted, redisbloom.Exists:
			if boolReply {
				r.Bool(res == redisbloom.Inserted)
			} else {
				r.Int(int64(res))
			}
		default:
			if !o.multi {
				if res == redisbloom.NoSpace {
					r.Error("Filter is full")
				} else {
					r.Error("ERR Insufficient memory")
				}
				return
			}
			if r.w.RESP3() && !o.nx {
				r.Bool(false)
			} else {
				r.Int(-1)
			}
		}
	}
	switch {
	case logged == nil:
	case len(logged) > len(args)-len(items):
		c.logArgs = logged
	case created:
		// The filter is all that this command made.
		if o.logCreate {
			c.logArgs = cfReserveArgs(key, o.capacity, o.bucketSize, o.maxIter, o.expansion)
		} else {
			c.logArgs = [][]byte{[]byte("CF.RESERVE"), key, []byte(strconv.FormatInt(o.capacity, 10))}
		}
		return
	default:
		c.skipLog = true // nothing changed
	}
	if created && o.logCreate {
		c.logBefore = cfReserveArgs(key, o.capacity, o.bucketSize, o.maxIter, o.expansion)
	}
}

// CF.ADD key item / CF.ADDNX key item
func cmdCFAdd(s *Server, c *Session, args [][]byte, r *Reply) {
	nx := lowerByte(args[0][len(args[0])-1]) == 'x'
	if len(args) != 3 {
		r.Error(wrongArity(lowerName(args[0])))
		return
	}
	s.cfInsertCommon(c, args, args[2:], s.defaultCFOpts(nx, false), r)
}

// CF.INSERT / CF.INSERTNX key [CAPACITY c] [NOCREATE] ITEMS item...
func cmdCFInsert(s *Server, c *Session, args [][]byte, r *Reply) {
	name := lowerName(args[0])
	o := s.defaultCFOpts(name[len(name)-1] == 'x', true)
	if len(args) < 4 {
		r.Error(wrongArity(name))
		return
	}
	pos, items := 2, -1
	for pos < len(args) && items < 0 {
		var c0 byte
		if len(args[pos]) > 0 {
			c0 = lowerByte(args[pos][0])
		}
		switch c0 {
		case 'c':
			pos++
			if pos == len(args) {
				r.Error(wrongArity(name))
				return
			}
			v, ok := resp.ParseInt(args[pos])
			if !ok {
				r.Error("Bad capacity")
				return
			}
			if v < s.filterConfig().cfInitialMin || v > cfMaxCapacity {
				r.Error("Capacity must be in the range [cf-bucket-size * 2, 1073741824]")
				return
			}
			o.capacity = v
			pos++
		case 'i':
			pos++
			items = pos
		case 'n':
			o.autocreate = false
			pos++
		default:
			r.Error("Unknown argument received")
			return
		}
	}
	if items < 0 || items == len(args) {
		r.Error(wrongArity(name))
		return
	}
	s.cfInsertCommon(c, args, args[items:], o, r)
}

// CF.EXISTS / CF.MEXISTS / CF.COUNT
func cmdCFCheck(s *Server, c *Session, args [][]byte, r *Reply) {
	// No lowerName on the way to a lookup: it allocates for an upper-case
	// name (most clients send CF.EXISTS).
	name := args[0]
	multi := len(name) > 3 && lowerByte(name[3]) == 'm'
	count := lowerByte(name[len(name)-1]) == 't'
	if (multi && len(args) < 3) || (!multi && len(args) != 3) {
		r.Error(wrongArity(lowerName(name)))
		return
	}
	cf, st := s.cuckooKey(args[1])
	if multi {
		r.Array(len(args) - 2)
	}
	for _, it := range args[2:] {
		switch {
		case count && st == stOK:
			r.Uint(cf.Count(it))
		case count:
			r.Int(0)
		default:
			r.Bool(st == stOK && cf.Exists(it))
		}
	}
}

// CF.DEL key item
func cmdCFDel(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 3 {
		r.Error(wrongArity("cf.del"))
		return
	}
	cf, st := s.cuckooKey(args[1])
	if st != stOK {
		r.Error("Not found")
		return
	}
	r.Bool(cf.Delete(args[2]))
}

// CF.COMPACT key (RedisBloom has it, undocumented)
func cmdCFCompact(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity("cf.compact"))
		return
	}
	cf, st := s.cuckooKey(args[1])
	if st != stOK {
		r.Error("Cuckoo filter was not found")
		return
	}
	before := cf.MemUsage()
	cf.Compact(true)
	if after := cf.MemUsage(); after < before {
		s.db.Unaccount(before - after)
	}
	r.OK()
}

// CF.INFO key
func cmdCFInfo(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 2 {
		r.Error(wrongArity("cf.info"))
		return
	}
	cf, st := s.cuckooKey(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	r.Map(8)
	r.Simple("Size")
	r.Uint(cf.MemUsage())
	r.Simple("Number of buckets")
	r.Uint(cf.NumBuckets)
	r.Simple("Number of filters")
	r.Int(int64(len(cf.Filters)))
	r.Simple("Number of items inserted")
	r.Uint(cf.NumItems)
	r.Simple("Number of items deleted")
	r.Uint(cf.NumDeletes)
	r.Simple("Bucket size")
	r.Int(int64(cf.BucketSize))
	r.Simple("Expansion rate")
	r.Int(int64(cf.Expansion))
	r.Simple("Max iterations")
	r.Int(int64(cf.MaxIterations))
}

// CF.SCANDUMP key iterator
func cmdCFScanDump(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 3 {
		r.Error(wrongArity("cf.scandump"))
		return
	}
	pos, ok := resp.ParseInt(args[2])
	if !ok || pos < 0 {
		r.Error("Invalid position")
		return
	}
	cf, st := s.cuckooKey(args[1])
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	r.Array(2)
	if cf.NumItems == 0 {
		r.Int(0)
		r.Null()
		return
	}
	if pos == 0 {
		r.Int(1)
		r.Bulk(cf.Header())
		return
	}
	next, chunk := cf.Chunk(pos)
	if chunk == nil {
		r.Int(0)
		r.Null()
		return
	}
	r.Int(next)
	r.Bulk(chunk)
}

// CF.LOADCHUNK key iterator data
func cmdCFLoadChunk(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) != 4 {
		r.Error(wrongArity("cf.loadchunk"))
		return
	}
	cf, st := s.cuckooKey(args[1])
	pos, ok := resp.ParseInt(args[2])
	if !ok || pos == 0 {
		r.Error("Invalid position")
		return
	}
	if pos == 1 {
		if st != stEmpty {
			r.Error(statusErr(st))
			return
		}
		ncf, err := redisbloom.LoadCuckooHeader(args[3], 65536, s.db.AllowFn())
		if err != nil {
			r.Error(err.Error())
			return
		}
		ncf.AllowAlloc = s.db.AllowFn()
		s.db.Put(string(args[1]), &keyspace.Entry{Kind: keyspace.KindCuckoo, CF: ncf})
		r.OK()
		return
	}
	if st != stOK {
		r.Error(statusErr(st))
		return
	}
	if err := cf.LoadChunk(pos, args[3]); err != nil {
		r.Error(err.Error())
		return
	}
	r.OK()
}
