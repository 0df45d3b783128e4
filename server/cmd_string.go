package server

import (
	"math"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// Plain strings: SET, GET, GETDEL, STRLEN, MSET, MGET (the others in
// cmd_string2.go), as Redis 7 answers
// them. bloomkit stores strings only so that clients (and test suites) that
// mix them with filters see RedisBloom's behaviour: a string key answers
// WRONGTYPE to BF.*/CF.* commands that need a filter, a filter key answers
// WRONGTYPE to GET, and SET replaces a key of any kind.

const (
	errOOMCommand = "OOM command not allowed when used memory > 'maxmemory'."
	errSyntax     = "ERR syntax error"
	errNotInt     = "ERR value is not an integer or out of range"
	errStrTooBig  = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	// maxStringLen keeps a value within the snapshot's u32 length field.
	maxStringLen = math.MaxUint32
)

// stringKey looks key up for reading, in a string command: the value, or
// stEmpty, or stMismatch for a key holding a filter. The lookup counts as
// a hit or a miss in a write too (GETDEL), as Redis's lookupKeyRead.
func (s *Server) stringKey(key []byte) ([]byte, status) {
	e := s.db.ReadLookup(key)
	if e == nil {
		return nil, stEmpty
	}
	if e.Kind != keyspace.KindString {
		return nil, stMismatch
	}
	return e.StrBytes(), stOK
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
func cmdSet(s *Server, c *Session, args [][]byte, r *Reply) {
	const (
		expNone = iota
		expEX
		expPX
		expEXAT
		expPXAT
		expKeep
	)
	var nx, xx, get bool
	exp := expNone
	var expArg []byte
	for i := 3; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch {
		case opt == "NX" && !xx:
			nx = true
		case opt == "XX" && !nx:
			xx = true
		case opt == "GET":
			get = true
		case opt == "KEEPTTL" && (exp == expNone || exp == expKeep):
			exp = expKeep
		case opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT":
			// As Redis: the same option again replaces its value;
			// another expiry option is a syntax error.
			kind := map[string]int{"EX": expEX, "PX": expPX, "EXAT": expEXAT, "PXAT": expPXAT}[opt]
			if (exp != expNone && exp != kind) || i+1 >= len(args) {
				r.Error(errSyntax)
				return
			}
			exp = kind
			i++
			expArg = args[i]
		default:
			r.Error(errSyntax)
			return
		}
	}
	now := s.db.NowMs()
	var at int64
	if exp != expNone && exp != expKeep {
		v, ok := resp.ParseInt(expArg)
		if !ok {
			r.Error(errNotInt)
			return
		}
		const maxMs = math.MaxInt64
		bad := v <= 0
		switch exp {
		case expEX, expEXAT:
			bad = bad || v > maxMs/1000
			v *= 1000
		}
		if exp == expEX || exp == expPX {
			bad = bad || v > maxMs-now
			v += now
		}
		if bad {
			r.Error("ERR invalid expire time in 'set' command")
			return
		}
		at = v
	}
	if len(args[2]) > maxStringLen {
		r.Error(errStrTooBig)
		return
	}
	key := args[1]
	var old *keyspace.Entry
	if get {
		// GET reads the old value: a hit or a miss, as Redis counts it.
		old = s.db.ReadLookup(key)
	} else {
		old = s.db.GetBytes(key)
	}
	if get && old != nil && old.Kind != keyspace.KindString {
		r.Error(errWrongType)
		return
	}
	if (nx && old != nil) || (xx && old == nil) {
		c.skipLog = true
		if get {
			replyOld(r, old)
		} else {
			r.Null()
		}
		return
	}
	if !s.db.RoomFor(uint64(len(args[2])), key) {
		if get {
			s.db.UnreadLookup(old != nil)
		}
		r.Error(errOOMCommand)
		return
	}
	if get {
		// The reply is written before the old value is replaced.
		replyOld(r, old)
	}
	logArgs := [][]byte{[]byte("SET"), key, args[2]}
	switch {
	case exp == expKeep && old != nil:
		at = old.ExpireAt
		logArgs = append(logArgs, []byte("KEEPTTL"))
	case at != 0:
		// Relative times are logged as absolute ones, so a replay
		// later does not extend the key's life.
		logArgs = append(logArgs, []byte("PXAT"), strconv.AppendInt(nil, at, 10))
	}
	s.db.PutString(key, args[2], at)
	c.logArgs = logArgs
	if !get {
		r.OK()
	}
}

func replyOld(r *Reply, old *keyspace.Entry) {
	if old == nil {
		r.Null()
		return
	}
	r.Bulk(old.StrBytes())
}

// GET key
func cmdGet(s *Server, c *Session, args [][]byte, r *Reply) {
	v, st := s.stringKey(args[1])
	switch st {
	case stEmpty:
		r.Null()
	case stMismatch:
		r.Error(errWrongType)
	default:
		r.Bulk(v)
	}
}

// GETDEL key
func cmdGetDel(s *Server, c *Session, args [][]byte, r *Reply) {
	v, st := s.stringKey(args[1])
	switch st {
	case stEmpty:
		c.skipLog = true
		r.Null()
	case stMismatch:
		r.Error(errWrongType)
	default:
		r.Bulk(v) // v stays valid: values are never changed in place
		s.db.Drop(string(args[1]), s.db.Lookup(string(args[1])))
		c.logArgs = [][]byte{[]byte("DEL"), args[1]}
	}
}

// STRLEN key
func cmdStrlen(s *Server, c *Session, args [][]byte, r *Reply) {
	v, st := s.stringKey(args[1])
	switch st {
	case stMismatch:
		r.Error(errWrongType)
	default:
		r.Int(int64(len(v)))
	}
}

// MSET key value [key value ...]
func cmdMSet(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args)%2 != 1 {
		r.Error(wrongArity("mset"))
		return
	}
	if s.putPairs(args, r) {
		r.OK()
	}
}

// putPairs sets the key value pairs of args[1:] (MSET, MSETNX), or answers
// the error that refuses them all: a value too long, or no room for them.
func (s *Server) putPairs(args [][]byte, r *Reply) bool {
	var n uint64
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		if len(args[i+1]) > maxStringLen {
			r.Error(errStrTooBig)
			return false
		}
		n += uint64(len(args[i+1]))
		keys = append(keys, args[i])
	}
	if !s.db.RoomFor(n, keys...) {
		r.Error(errOOMCommand)
		return false
	}
	for i := 1; i < len(args); i += 2 {
		s.db.PutString(args[i], args[i+1], 0)
	}
	return true
}

// MGET key [key ...]: a key that is missing or not a string gives nil.
func cmdMGet(s *Server, c *Session, args [][]byte, r *Reply) {
	r.Array(len(args) - 1)
	for _, k := range args[1:] {
		if v, st := s.stringKey(k); st == stOK {
			r.Bulk(v)
		} else {
			r.Null()
		}
	}
}
