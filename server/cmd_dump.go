package server

import (
	"encoding/binary"
	"errors"
	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
	"github.com/bloomkit/bloomkit/server/internal/resp"
	"github.com/bloomkit/bloomkit/tdigest"
)

// DUMP and RESTORE speak Redis's DUMP format: the value as an RDB file
// holds it (a string; a RedisBloom filter as the module value RedisBloom
// saves, MBbloom-- or MBbloomCF), the 2-byte RDB version and the CRC-64.
// A payload DUMP gives here restores on Redis + RedisBloom (6.2 and
// later: the version is rdb.DumpVersion, which every one of them
// accepts), and one Redis + RedisBloom gives restores here.
//
// What Redis cannot hold is refused where it would be lost: DUMP of one
// of bloomkit's own filters (TYPE BKbloom--: blocked, random-seeded or
// window layouts, which RedisBloom has no encoding for) answers an error
// saying so, and RESTORE of a Redis type bloom serve does not hold (a
// list, a hash, another module's value) answers "Bad data format" with
// the type named.

const (
	errDumpPayload = "ERR DUMP payload version or checksum are wrong"
	errBadData     = "ERR Bad data format"
	errBusyKey     = "BUSYKEY Target key name already exists."
)

// DUMP key
func cmdDump(s *Server, c *Session, args [][]byte, r *Reply) {
	e := s.db.GetBytes(args[1])
	if e == nil {
		r.Null()
		return
	}
	var payload []byte
	var err error
	switch e.Kind {
	case keyspace.KindString:
		payload = rdb.DumpString(e.StrBytes(), rdb.DumpVersion)
	case keyspace.KindBloom:
		payload, err = rdb.DumpModule(rdb.BloomValue{Bloom: e.BF}, rdb.DumpVersion)
	case keyspace.KindCuckoo:
		payload, err = rdb.DumpModule(rdb.CuckooValue{Cuckoo: e.CF}, rdb.DumpVersion)
	case keyspace.KindTDigest:
		// RedisBloom merges the digest's buffer when it saves it, in
		// place: so does DUMP here (logged as the merge it is).
		payload, err = rdb.DumpModule(rdb.TDigestValue{Digest: s.tdQuery(c, args[1], e.TD())}, rdb.DumpVersion)
	case keyspace.KindCMS:
		payload, err = rdb.DumpModule(rdb.CMSValue{Sketch: e.CMS()}, rdb.DumpVersion)
	case keyspace.KindTopK:
		payload, err = rdb.DumpModule(rdb.TopKValue{TopK: e.TopK()}, rdb.DumpVersion)
	default:
		r.Error("ERR DUMP cannot encode a " + e.Kind.String() + " key: it holds one of bloomkit's own filters (a layout RedisBloom has no encoding for), which Redis cannot restore; copy it between bloomkit servers with BF.SCANDUMP and BF.LOADCHUNK")
		return
	}
	if err != nil {
		r.Error("ERR DUMP: " + err.Error())
		return
	}
	r.Bulk(payload)
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
//
// IDLETIME and FREQ are checked as Redis checks them and have no further
// effect: bloom serve keeps no LFU data, and a restored key's idle time
// (OBJECT IDLETIME) starts at 0. What RESTORE did is
// logged: RESTORE with the absolute expiry (ABSTTL) and the payload in
// RDB version rdb.DumpVersion, or a DEL when REPLACE removed a key and
// the restored one had expired already, or nothing.
func cmdRestore(s *Server, c *Session, args [][]byte, r *Reply) {
	var replace, absttl, idle, freq bool
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "replace":
			replace = true
		case opt == "absttl":
			absttl = true
		case opt == "idletime" && more >= 1 && !freq:
			v, ok := resp.ParseInt(args[j+1])
			if !ok {
				r.Error(errNotInt)
				return
			}
			if v < 0 {
				r.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = true
			j++
		case opt == "freq" && more >= 1 && !idle:
			v, ok := resp.ParseInt(args[j+1])
			if !ok {
				r.Error(errNotInt)
				return
			}
			if v < 0 || v > 255 {
				r.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = true
			j++
		default:
			r.Error(errSyntax)
			return
		}
	}
	key := args[1]
	old := s.db.GetBytes(key)
	if !replace && old != nil {
		r.Error(errBusyKey)
		return
	}
	ttl, ok := resp.ParseInt(args[2])
	if !ok {
		r.Error(errNotInt)
		return
	}
	if ttl < 0 {
		r.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	// The filters' arrays are counted against the memory limit as they
	// are allocated; what is not kept is taken out again.
	var accounted uint64
	oom := false
	allow := func(n uint64) error {
		if err := s.db.Allow(n); err != nil {
			oom = true
			return err
		}
		accounted += n
		return nil
	}
	opts := rdb.Options{MaxString: maxStringLen}
	rdb.AddRedisBloomDecoders(&opts, allow)
	rdb.AddSketchDecoders(&opts, allow)
	v, err := rdb.ParseDump(args[3], opts)
	if err == nil && v.Err != nil {
		err = v.Err
	}
	if err != nil {
		s.db.Unaccount(accounted)
		var te *rdb.TypeError
		switch {
		case errors.Is(err, rdb.ErrDumpFooter):
			r.Error(errDumpPayload)
		case oom:
			r.Error(errOOMCommand)
		case errors.As(err, &te) && te.Module == "":
			r.Error(errBadData + ": the payload holds a " + te.Name + "; bloom serve holds strings and RedisBloom filters only")
		default:
			r.Error(errBadData)
		}
		return
	}
	at := ttl
	if ttl != 0 && !absttl {
		at += s.db.NowMs()
	}
	discard := func() {
		switch f := v.Value.(type) {
		case *redisbloom.Bloom:
			f.Free()
		case *redisbloom.Cuckoo:
			f.Free()
		}
		s.db.Unaccount(accounted)
	}
	if at != 0 && at <= s.db.NowMs() && !s.db.Loading() && !s.db.Following() {
		// Expired already: nothing is stored (as Redis); a key REPLACE
		// removed is a DEL.
		discard()
		if old != nil {
			s.db.Drop(string(key), s.db.Lookup(string(key)))
			c.logArgs = [][]byte{[]byte("DEL"), key}
		} else {
			c.skipLog = true
		}
		r.OK()
		return
	}
	var e *keyspace.Entry
	switch f := v.Value.(type) {
	case *redisbloom.Bloom:
		f.AllowAlloc = s.db.AllowFn()
		e = &keyspace.Entry{Kind: keyspace.KindBloom, BF: f, ExpireAt: at}
	case *redisbloom.Cuckoo:
		f.AllowAlloc = s.db.AllowFn()
		e = &keyspace.Entry{Kind: keyspace.KindCuckoo, CF: f, ExpireAt: at}
	case *tdigest.Digest:
		e = keyspace.NewTDigest(f, at)
	case *cms.Sketch:
		e = keyspace.NewCMS(f, at)
	case *topk.TopK:
		// Counted as the keyspace counts a Top-K: all of it.
		s.db.Resized(accounted, f.MemUsage())
		e = keyspace.NewTopK(f, at)
	default:
		if v.Type != rdb.TypeString {
			discard()
			r.Error(errBadData)
			return
		}
		if !s.db.RoomFor(uint64(len(v.String)), key) {
			r.Error(errOOMCommand)
			return
		}
	}
	if e != nil {
		s.db.Put(string(key), e)
	} else {
		s.db.PutString(key, v.String, at)
	}
	// Logged in the RDB version every Redis from 6.2 restores (a Redis
	// replica of this server may be older than the payload's writer):
	// strings and module values are encoded alike in all of them.
	logged := args[3]
	if binary.LittleEndian.Uint16(logged[len(logged)-10:]) != rdb.DumpVersion {
		logged = rdb.WithDumpVersion(logged, rdb.DumpVersion)
	}
	c.logArgs = [][]byte{[]byte("RESTORE"), key, []byte(strconv.FormatInt(at, 10)), logged}
	if replace {
		c.logArgs = append(c.logArgs, []byte("REPLACE"))
	}
	if at != 0 {
		c.logArgs = append(c.logArgs, []byte("ABSTTL"))
	}
	r.OK()
}
