package server

// Keyspace commands: DEL, EXISTS, TYPE, KEYS, SCAN, RENAME, expiry, DBSIZE, FLUSHALL.

import (
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/glob"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

func cmdDel(s *Server, c *Session, args [][]byte, r *Reply) {
	n := int64(0)
	for _, k := range args[1:] {
		if e := s.db.Get(string(k)); e != nil {
			s.db.Drop(string(k), e)
			n++
		}
	}
	if n == 0 {
		c.skipLog = true
	}
	r.Int(n)
}

// COPY source destination [DB 0] [REPLACE]: a copy of the source key,
// value and expiry, as Redis 7. There is one database, so DB is 0 or
// refused. Logged as COPY with REPLACE when given: the copy depends only on
// the source and what it replaces.
func cmdCopy(s *Server, c *Session, args [][]byte, r *Reply) {
	replace := false
	for i := 3; i < len(args); i++ {
		switch strings.ToLower(string(args[i])) {
		case "replace":
			replace = true
		case "db":
			if i+1 >= len(args) {
				r.Error(errSyntax)
				return
			}
			i++
			db, ok := resp.ParseInt(args[i])
			if !ok {
				r.Error(errNotInt)
				return
			}
			if db != 0 {
				r.Error("ERR DB index is out of range")
				return
			}
		default:
			r.Error(errSyntax)
			return
		}
	}
	if string(args[1]) == string(args[2]) {
		r.Error("ERR source and destination objects are the same")
		return
	}
	// Redis reads the source (a hit or a miss) before anything else.
	s.db.ReadLookup(args[1])
	copied, fits, err := s.db.Copy(string(args[1]), string(args[2]), replace)
	switch {
	case err != nil:
		r.Error("ERR " + err.Error())
		return
	case !fits:
		r.Error(errOOMCommand)
		return
	case !copied:
		c.skipLog = true
		r.Int(0)
		return
	}
	c.logArgs = [][]byte{[]byte("COPY"), args[1], args[2]}
	if replace {
		c.logArgs = append(c.logArgs, []byte("REPLACE"))
	}
	r.Int(1)
}

// RANDOMKEY: a key picked at random, or nil when there is none.
func cmdRandomKey(s *Server, c *Session, args [][]byte, r *Reply) {
	k, ok := s.db.RandomKey()
	if !ok {
		r.Null()
		return
	}
	r.BulkString(k)
}

func cmdExists(s *Server, c *Session, args [][]byte, r *Reply) {
	n := int64(0)
	for _, k := range args[1:] {
		if s.db.GetNoTouch(string(k)) != nil {
			n++
		}
	}
	r.Int(n)
}

func cmdType(s *Server, c *Session, args [][]byte, r *Reply) {
	e := s.db.GetNoTouch(string(args[1]))
	if e == nil {
		r.Simple("none")
		return
	}
	r.Simple(e.Kind.String())
}

func cmdKeys(s *Server, c *Session, args [][]byte, r *Reply) {
	pat := string(args[1])
	var out []string
	// KEYS is O(N) by its nature (as in Redis); it walks the scan order,
	// so its replies come in that order, without a sort. Each key costs at
	// most O(len(pattern) × len(key)) to match (glob.go).
	s.db.Scan(0, s.db.Len(), func(k string, e *keyspace.Entry) {
		if pat == "*" || glob.Match(pat, k) {
			out = append(out, k)
		}
	})
	r.Array(len(out))
	for _, k := range out {
		r.BulkString(k)
	}
}

// maxScanCount bounds the keys one SCAN call visits, whatever COUNT says,
// so that one call cannot hold the keyspace lock for long.
const maxScanCount = 100000

func cmdScan(s *Server, c *Session, args [][]byte, r *Reply) {
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		r.Error("ERR invalid cursor")
		return
	}
	count := int64(10)
	pat, typ, usePat := "", "", false
	for i := 2; i < len(args); i++ {
		opt := strings.ToLower(string(args[i]))
		if i+1 >= len(args) {
			r.Error("ERR syntax error")
			return
		}
		switch opt {
		case "count":
			v, ok := resp.ParseInt(args[i+1])
			if !ok {
				r.Error("ERR value is not an integer or out of range")
				return
			}
			if v < 1 {
				r.Error("ERR syntax error")
				return
			}
			count = v
		case "match":
			// As Redis: "*" is no filter at all (it also takes the empty
			// key, which the matcher does not).
			pat = string(args[i+1])
			usePat = pat != "*"
		case "type":
			typ = strings.ToLower(string(args[i+1]))
		default:
			r.Error("ERR syntax error")
			return
		}
		i++
	}
	var out []string
	next := s.db.Scan(cur, int(min(count, maxScanCount)), func(k string, e *keyspace.Entry) {
		if usePat && !glob.Match(pat, k) {
			return
		}
		if typ != "" && strings.ToLower(e.Kind.String()) != typ {
			return
		}
		out = append(out, k)
	})
	r.Array(2)
	r.BulkString(strconv.FormatUint(next, 10))
	r.Array(len(out))
	for _, k := range out {
		r.BulkString(k)
	}
}

func cmdRename(s *Server, c *Session, args [][]byte, r *Reply) {
	src, dst := string(args[1]), string(args[2])
	e := s.db.Get(src)
	if e == nil {
		r.Error("ERR no such key")
		return
	}
	if src != dst {
		s.db.Rename(src, dst, e)
	}
	r.OK()
}

// EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT key time [NX|XX|GT|LT]
func cmdExpire(s *Server, c *Session, args [][]byte, r *Reply) {
	name := lowerName(args[0])
	v, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error("ERR value is not an integer or out of range")
		return
	}
	var nx, xx, gt, lt bool
	for _, a := range args[3:] {
		switch strings.ToUpper(string(a)) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		default:
			r.Error("ERR Unsupported option " + trimArg(a))
			return
		}
	}
	if nx && (xx || gt || lt) {
		r.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		r.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	now := s.db.NowMs()
	var at int64
	const maxMs = 1 << 62
	switch name {
	case "expire":
		if v > maxMs/1000 || v < -maxMs/1000 {
			r.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		at = now + v*1000
	case "pexpire":
		if v > maxMs || v < -maxMs {
			r.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		at = now + v
	case "expireat":
		if v > maxMs/1000 || v < -maxMs/1000 {
			r.Error("ERR invalid expire time in '" + name + "' command")
			return
		}
		at = v * 1000
	default:
		at = v
	}
	key := string(args[1])
	e := s.db.Get(key)
	if e == nil {
		c.skipLog = true
		r.Int(0)
		return
	}
	cur := e.ExpireAt
	if (nx && cur != 0) || (xx && cur == 0) ||
		(gt && (cur == 0 || at <= cur)) || (lt && cur != 0 && at >= cur) {
		c.skipLog = true
		r.Int(0)
		return
	}
	if at <= now && !s.db.Loading() {
		// A time in the past deletes the key now, and the log says so:
		// replay does not expire keys (its clock is not the one the
		// clients saw), so a PEXPIREAT <past> would bring the key back
		// for the commands logged after it. Redis logs a DEL too.
		s.db.Drop(key, e)
		c.logArgs = [][]byte{[]byte("DEL"), args[1]}
		r.Int(1)
		return
	}
	s.db.SetExpire(e, at)
	s.db.Changed()
	c.logArgs = [][]byte{[]byte("PEXPIREAT"), args[1], []byte(strconv.FormatInt(at, 10))}
	r.Int(1)
}

func cmdTTL(s *Server, c *Session, args [][]byte, r *Reply) {
	e := s.db.GetNoTouch(string(args[1]))
	switch {
	case e == nil:
		r.Int(-2)
	case e.ExpireAt == 0:
		r.Int(-1)
	default:
		ms := e.ExpireAt - s.db.NowMs()
		if lowerName(args[0]) == "ttl" {
			r.Int((ms + 500) / 1000)
		} else {
			r.Int(ms)
		}
	}
}

func cmdPersist(s *Server, c *Session, args [][]byte, r *Reply) {
	e := s.db.Get(string(args[1]))
	if e == nil || e.ExpireAt == 0 {
		c.skipLog = true
		r.Int(0)
		return
	}
	s.db.SetExpire(e, 0)
	s.db.Changed()
	r.Int(1)
}

func cmdDBSize(s *Server, c *Session, args [][]byte, r *Reply) {
	r.Int(int64(s.db.Len()))
}

func cmdFlush(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args) > 2 {
		r.Error("ERR syntax error")
		return
	}
	if len(args) == 2 {
		m := strings.ToUpper(string(args[1]))
		if m != "ASYNC" && m != "SYNC" {
			r.Error("ERR syntax error")
			return
		}
	}
	s.db.Flush()
	r.OK()
}
