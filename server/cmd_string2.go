package server

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// The rest of Redis 7's commands on plain strings: INCR, INCRBY, DECR,
// DECRBY, INCRBYFLOAT, APPEND, SETNX, SETEX, PSETEX, GETSET, GETEX,
// MSETNX, SETRANGE, GETRANGE and SUBSTR, with Redis's replies and errors.
// A Redis master's clients use them (counters above all), so a replica of
// such a master must apply them. What is logged and fed to replicas is
// what Redis propagates: the command itself where replaying it is exact
// (INCR, APPEND, SETRANGE, SETNX, MSETNX), else what it did (INCRBYFLOAT
// as SET … KEEPTTL, SETEX and PSETEX as SET … PXAT, GETSET as SET, GETEX
// as PEXPIREAT, PERSIST or DEL).

const (
	errIncrOverflow = "ERR increment or decrement would overflow"
	errNotFloat     = "ERR value is not a valid float"
	errFloatNaNInf  = "ERR increment would produce NaN or Infinity"
)

// stringLimitOK is Redis's check that a string grown to size+add bytes
// stays within proto-max-bulk-len; commands of the log's replay and of a
// master are exempt, as Redis exempts its master and AOF clients.
func (s *Server) stringLimitOK(c *Session, size, add int64) bool {
	total := size + add
	if total > maxStringLen || total < size {
		return false
	}
	if c.fromMaster || s.db.Loading() {
		return true
	}
	return total <= int64(s.cfg.MaxBulk)
}

// writableString looks key up for a command that changes a string: the
// entry (nil when missing), or false after a WRONGTYPE reply.
func (s *Server) writableString(key []byte, r *Reply) (*keyspace.Entry, bool) {
	e := s.db.GetBytes(key)
	if e != nil && e.Kind != keyspace.KindString {
		r.Error(errWrongType)
		return nil, false
	}
	return e, true
}

func expireOf(e *keyspace.Entry) int64 {
	if e == nil {
		return 0
	}
	return e.ExpireAt
}

// INCR key, DECR key, INCRBY key n, DECRBY key n
func cmdIncrBy(s *Server, c *Session, args [][]byte, r *Reply) {
	name := lowerName(args[0])
	var by int64 = 1
	switch name {
	case "decr":
		by = -1
	case "incrby", "decrby":
		v, ok := resp.ParseInt(args[2])
		if !ok {
			r.Error(errNotInt)
			return
		}
		if name == "decrby" {
			if v == math.MinInt64 {
				r.Error("ERR decrement would overflow")
				return
			}
			v = -v
		}
		by = v
	}
	key := args[1]
	e, ok := s.writableString(key, r)
	if !ok {
		return
	}
	var cur int64
	if e != nil {
		if cur, ok = resp.ParseInt(e.StrBytes()); !ok {
			r.Error(errNotInt)
			return
		}
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		r.Error(errIncrOverflow)
		return
	}
	cur += by
	val := strconv.AppendInt(nil, cur, 10)
	if !s.db.RoomFor(uint64(len(val)), key) {
		r.Error(errOOMCommand)
		return
	}
	s.db.PutString(key, val, expireOf(e))
	r.Int(cur)
}

// longDouble is the precision of the C long double Redis computes
// INCRBYFLOAT in on x86-64 (80-bit extended: a 64-bit significand, an
// exponent up to 16383).
const (
	longDoublePrec   = 64
	longDoubleMaxExp = 16384 // MantExp of the largest finite value
)

var decimalFloat = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// parseLongDouble reads b as Redis's string2ld reads a float (strtold,
// correctly rounded to the long double's 64-bit significand): no leading
// space, nothing after the number, no NaN, no value out of range.
// Infinities are accepted, as strtold accepts them. It returns the value
// (nil with inf set for an infinity) and whether b is a float.
func parseLongDouble(b []byte) (f *big.Float, inf int, ok bool) {
	if len(b) == 0 || len(b) >= 5*1024 {
		return nil, 0, false
	}
	str := string(b)
	body := strings.TrimLeft(str, "+-")
	if len(str)-len(body) > 1 {
		return nil, 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if str[0] == '-' {
			return nil, -1, true
		}
		return nil, 1, true
	}
	f = new(big.Float).SetPrec(longDoublePrec)
	if strings.HasPrefix(strings.ToLower(body), "0x") {
		// A hexadecimal float is binary: parsing rounds it exactly.
		if _, _, err := f.Parse(str, 0); err != nil {
			return nil, 0, false
		}
	} else {
		if !decimalFloat.MatchString(str) {
			return nil, 0, false
		}
		mant, exp := str, int64(0)
		if i := strings.IndexAny(str, "eE"); i >= 0 {
			mant = str[:i]
			e, err := strconv.ParseInt(str[i+1:], 10, 64)
			if err != nil {
				e = math.MaxInt32 // far out of range either way
				if str[i+1] == '-' {
					e = -e
				}
			}
			exp = e
		}
		zero := strings.Trim(mant, "+-0.") == ""
		if zero {
			f.SetInt64(0)
			if mant[0] == '-' {
				f.Neg(f)
			}
			return f, 0, true
		}
		if exp > 6000 || exp < -6000 {
			return nil, 0, false // strtold: ERANGE
		}
		q, ok := new(big.Rat).SetString(mant + "e" + strconv.FormatInt(exp, 10))
		if !ok {
			return nil, 0, false
		}
		f.SetRat(q) // correctly rounded, as strtold
		if f.Sign() == 0 {
			return nil, 0, false
		}
	}
	if f.MantExp(nil) > longDoubleMaxExp || (f.Sign() != 0 && f.MantExp(nil) < -16445) {
		return nil, 0, false // strtold: ERANGE, to infinity or to zero
	}
	return f, 0, true
}

// formatLongDouble writes v as Redis's ld2string in its human mode:
// printf's "%.17Lf" without the trailing zeros (and the point), "-0" as
// "0".
func formatLongDouble(v *big.Float) []byte {
	out := v.Text('f', 17)
	if strings.IndexByte(out, '.') >= 0 {
		out = strings.TrimRight(out, "0")
		out = strings.TrimSuffix(out, ".")
	}
	if out == "-0" {
		out = "0"
	}
	return []byte(out)
}

// INCRBYFLOAT key increment
func cmdIncrByFloat(s *Server, c *Session, args [][]byte, r *Reply) {
	key := args[1]
	e, ok := s.writableString(key, r)
	if !ok {
		return
	}
	cur := new(big.Float).SetPrec(longDoublePrec)
	var curInf int
	if e != nil {
		v, inf, ok := parseLongDouble(e.StrBytes())
		if !ok {
			r.Error(errNotFloat)
			return
		}
		if v != nil {
			cur = v
		}
		curInf = inf
	}
	by, byInf, ok := parseLongDouble(args[2])
	if !ok {
		r.Error(errNotFloat)
		return
	}
	if curInf != 0 || byInf != 0 {
		r.Error(errFloatNaNInf) // inf + x is inf, inf - inf is NaN
		return
	}
	sum := new(big.Float).SetPrec(longDoublePrec).Add(cur, by)
	if sum.MantExp(nil) > longDoubleMaxExp {
		r.Error(errFloatNaNInf)
		return
	}
	val := formatLongDouble(sum)
	if !s.db.RoomFor(uint64(len(val)), key) {
		r.Error(errOOMCommand)
		return
	}
	s.db.PutString(key, val, expireOf(e))
	// As Redis: replicated as the value it computed, so replicas and
	// replay do not depend on floating-point arithmetic.
	c.logArgs = [][]byte{[]byte("SET"), key, val, []byte("KEEPTTL")}
	r.Bulk(val)
}

// APPEND key value
func cmdAppend(s *Server, c *Session, args [][]byte, r *Reply) {
	key, add := args[1], args[2]
	e, ok := s.writableString(key, r)
	if !ok {
		return
	}
	var old []byte
	if e != nil {
		old = e.StrBytes()
		if !s.stringLimitOK(c, int64(len(old)), int64(len(add))) {
			r.Error(errStrTooBig)
			return
		}
	}
	val := make([]byte, 0, len(old)+len(add))
	val = append(append(val, old...), add...)
	if !s.db.RoomFor(uint64(len(val)), key) {
		r.Error(errOOMCommand)
		return
	}
	s.db.PutString(key, val, expireOf(e))
	r.Int(int64(len(val)))
}

// SETNX key value
func cmdSetNX(s *Server, c *Session, args [][]byte, r *Reply) {
	key := args[1]
	if s.db.GetBytes(key) != nil {
		c.skipLog = true
		r.Int(0)
		return
	}
	if len(args[2]) > maxStringLen {
		r.Error(errStrTooBig)
		return
	}
	if !s.db.RoomFor(uint64(len(args[2])), key) {
		r.Error(errOOMCommand)
		return
	}
	s.db.PutString(key, args[2], 0)
	r.Int(1)
}

// SETEX key seconds value, PSETEX key milliseconds value
func cmdSetEx(s *Server, c *Session, args [][]byte, r *Reply) {
	name := lowerName(args[0])
	v, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error(errNotInt)
		return
	}
	at, ok := relativeExpire(v, name == "setex", s.db.NowMs())
	if !ok {
		r.Error("ERR invalid expire time in '" + name + "' command")
		return
	}
	key, val := args[1], args[3]
	if len(val) > maxStringLen {
		r.Error(errStrTooBig)
		return
	}
	if !s.db.RoomFor(uint64(len(val)), key) {
		r.Error(errOOMCommand)
		return
	}
	s.db.PutString(key, val, at)
	c.logArgs = [][]byte{[]byte("SET"), key, val, []byte("PXAT"), strconv.AppendInt(nil, at, 10)}
	r.OK()
}

// relativeExpire is the absolute time in ms of an expiry v seconds
// (seconds set) or milliseconds from now, as SET's EX and PX check it:
// false when v is not positive or the time overflows.
func relativeExpire(v int64, seconds bool, now int64) (int64, bool) {
	if v <= 0 || (seconds && v > math.MaxInt64/1000) {
		return 0, false
	}
	if seconds {
		v *= 1000
	}
	if v > math.MaxInt64-now {
		return 0, false
	}
	return v + now, true
}

// GETSET key value: SET key value (the time to live goes), answering the
// old value.
func cmdGetSet(s *Server, c *Session, args [][]byte, r *Reply) {
	key, val := args[1], args[2]
	e := s.db.ReadLookup(key) // reads the old value: a hit or a miss, as Redis
	if e != nil && e.Kind != keyspace.KindString {
		r.Error(errWrongType)
		return
	}
	if len(val) > maxStringLen {
		r.Error(errStrTooBig)
		return
	}
	if !s.db.RoomFor(uint64(len(val)), key) {
		s.db.UnreadLookup(e != nil)
		r.Error(errOOMCommand)
		return
	}
	replyOld(r, e) // written before the value is replaced
	s.db.PutString(key, val, 0)
	c.logArgs = [][]byte{[]byte("SET"), key, val}
}

// GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]
func cmdGetEx(s *Server, c *Session, args [][]byte, r *Reply) {
	var opt string // "", "PERSIST", "EX", "PX", "EXAT", "PXAT"
	var expArg []byte
	for i := 2; i < len(args); i++ {
		o := strings.ToUpper(string(args[i]))
		switch {
		case o == "PERSIST" && (opt == "" || opt == "PERSIST"):
			opt = o
		case (o == "EX" || o == "PX" || o == "EXAT" || o == "PXAT") && (opt == "" || opt == o) && i+1 < len(args):
			opt = o
			i++
			expArg = args[i]
		default:
			r.Error(errSyntax)
			return
		}
	}
	key := args[1]
	e := s.db.ReadLookup(key) // a hit or a miss, as Redis counts GETEX's
	if e == nil {
		c.skipLog = true
		r.Null()
		return
	}
	if e.Kind != keyspace.KindString {
		r.Error(errWrongType)
		return
	}
	var at int64
	now := s.db.NowMs()
	if expArg != nil {
		v, ok := resp.ParseInt(expArg)
		if !ok {
			r.Error(errNotInt)
			return
		}
		switch opt {
		case "EX", "PX":
			at, ok = relativeExpire(v, opt == "EX", now)
		default:
			at, ok = v, v > 0
			if opt == "EXAT" {
				ok = ok && v <= math.MaxInt64/1000
				at = v * 1000
			}
		}
		if !ok {
			r.Error("ERR invalid expire time in 'getex' command")
			return
		}
	}
	r.Bulk(e.StrBytes()) // the value stays valid: values are never changed in place
	switch {
	case expArg != nil && at <= now && !s.db.Loading():
		// An absolute time in the past deletes the key, logged as DEL
		// (replay does not expire keys), as Redis propagates it.
		s.db.Drop(string(key), s.db.Lookup(string(key)))
		c.logArgs = [][]byte{[]byte("DEL"), key}
	case expArg != nil:
		s.db.SetExpire(e, at)
		s.db.Changed()
		c.logArgs = [][]byte{[]byte("PEXPIREAT"), key, strconv.AppendInt(nil, at, 10)}
	case opt == "PERSIST" && e.ExpireAt != 0:
		s.db.SetExpire(e, 0)
		s.db.Changed()
		c.logArgs = [][]byte{[]byte("PERSIST"), key}
	default:
		c.skipLog = true
	}
}

// MSETNX key value [key value ...]: all or nothing, nothing when one of
// the keys exists (of any type).
func cmdMSetNX(s *Server, c *Session, args [][]byte, r *Reply) {
	if len(args)%2 != 1 {
		r.Error(wrongArity("msetnx"))
		return
	}
	for i := 1; i < len(args); i += 2 {
		if s.db.GetBytes(args[i]) != nil {
			c.skipLog = true
			r.Int(0)
			return
		}
	}
	if s.putPairs(args, r) {
		r.Int(1)
	}
}

// SETRANGE key offset value
func cmdSetRange(s *Server, c *Session, args [][]byte, r *Reply) {
	off, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error(errNotInt)
		return
	}
	if off < 0 {
		r.Error("ERR offset is out of range")
		return
	}
	key, part := args[1], args[3]
	e, ok := s.writableString(key, r)
	if !ok {
		return
	}
	var old []byte
	if e != nil {
		old = e.StrBytes()
	}
	if len(part) == 0 {
		// Nothing to write: the length, and no key is created.
		c.skipLog = true
		r.Int(int64(len(old)))
		return
	}
	if !s.stringLimitOK(c, off, int64(len(part))) {
		r.Error(errStrTooBig)
		return
	}
	n := max(int64(len(old)), off+int64(len(part)))
	if !s.db.RoomFor(uint64(n), key) {
		r.Error(errOOMCommand)
		return
	}
	val := make([]byte, n)
	copy(val, old)
	copy(val[off:], part)
	s.db.PutString(key, val, expireOf(e))
	r.Int(n)
}

// GETRANGE key start end, SUBSTR key start end
func cmdGetRange(s *Server, c *Session, args [][]byte, r *Reply) {
	start, ok1 := resp.ParseInt(args[2])
	if !ok1 {
		r.Error(errNotInt)
		return
	}
	end, ok2 := resp.ParseInt(args[3])
	if !ok2 {
		r.Error(errNotInt)
		return
	}
	v, st := s.stringKey(args[1])
	switch st {
	case stMismatch:
		r.Error(errWrongType)
		return
	case stEmpty:
		r.Bulk([]byte{})
		return
	}
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		r.Bulk([]byte{})
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		r.Bulk([]byte{})
		return
	}
	r.Bulk(v[start : end+1])
}
