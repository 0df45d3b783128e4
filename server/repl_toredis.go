package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
)

// Redis replicas: a redis-server (with the RedisBloom module) can follow
// bloom serve, the way back from bloom serve to Redis and the way to run
// mixed fleets.
//
// A replica that sent REPLCONF listening-port but not bloomkit-run-id is
// a Redis server. Its full sync's payload is an RDB (version 9: every
// Redis from 6.2 on loads it, and strings and module values are encoded
// alike in versions 9 to 12) built from the same copy-on-write snapshot
// as a bloom serve replica's: the snapshot is written to a temporary file
// as for any replica, then turned into the RDB key by key (strings with
// their expiries; Bloom chains and cuckoo filters as RedisBloom's module
// values MBbloom-- and MBbloomCF), off the keyspace lock; the stream that
// follows is the same stream every replica reads, since what a command
// did is logged as plain Redis and RedisBloom commands.
//
// What Redis cannot hold — bloomkit's own filters (BF.RESERVE with LAYOUT,
// WINDOW, GENERATIONS, SEED or START) — is refused before any byte of
// payload, so the replica keeps its data: SYNC/PSYNC answers an error
// naming how many there are and a few of them. That check costs O(1) (the
// keyspace keeps its native keys apart) and comes before any snapshot, so
// a Redis replica retrying every second costs nothing more. While a Redis
// replica is attached, commands that would create such a key or put a
// command Redis does not have in the stream (BF.MERGE, BF.ADVANCE, a native
// BF.LOADCHUNK) are refused with an error that says why; should a native
// key appear anyway (this server itself follows a bloom serve master that
// creates one), the Redis replicas are disconnected. A Redis replica's
// partial resync is accepted only from an offset after the last record a
// Redis server could not apply.

// errRedisRefused: a Redis replica's full sync was refused before any
// payload (it was never counted as attached).
var errRedisRefused = errors.New("refused a Redis replica: the keyspace holds keys Redis cannot hold")

// redisRDBVersion is the RDB version of a Redis replica's payload.
const redisRDBVersion = 9

// redisRefusal is the error SYNC/PSYNC answers a Redis replica while the
// keyspace holds keys Redis cannot hold, or "" (db.mu held). To PSYNC it
// is a NOMASTERLINK error: a Redis replica takes that as "try again
// later" and asks again a second later, keeping its data; any other error
// makes it fall back to SYNC and, refused again, reconnect at once, in a
// tight loop. It stays under 250 bytes: Redis reads the reply to PSYNC
// into a 256-byte buffer and would take the rest for the next reply.
func (s *Server) redisRefusal(psync bool) string {
	n, names := s.db.Natives(3)
	if n == 0 {
		return ""
	}
	sort.Strings(names)
	code := "ERR"
	if psync {
		code = "NOMASTERLINK"
	}
	for k := len(names); ; k-- {
		q := make([]string, k)
		for i, name := range names[:k] {
			if len(name) > 40 {
				name = name[:40] + "..."
			}
			q[i] = strconv.Quote(name)
		}
		if k < n {
			q = append(q, "...")
		}
		msg := fmt.Sprintf("%s bloom serve holds %d key(s) a Redis replica cannot hold (bloomkit's own filters): %s; refused before any payload, the replica keeps its data",
			code, n, strings.Join(q, ", "))
		if len(msg) < 250 || k == 0 {
			return msg
		}
	}
}

// errRedisReplicaAttached starts the error of a command refused while a
// Redis replica is attached.
const errRedisReplicaAttached = "ERR a Redis replica is attached, which cannot apply "

// redisRefusesCommand is the error for a write a Redis replica could not
// follow, or "" (checked while one is attached, keyspace lock held).
func (s *Server) redisRefusesCommand(cmd *command, args [][]byte) string {
	switch cmd.name {
	case "copy":
		// RedisBloom registers no copy callback for its types: Redis
		// answers COPY of one "not supported for this module key", so a
		// Redis replica would miss the copy. Strings copy there.
		if len(args) >= 3 && s.copiesModuleKey(args) {
			return errRedisReplicaAttached + "COPY of a filter or sketch (RedisBloom cannot copy its keys); detach it first (REPLICAOF NO ONE on it)"
		}
	case "bf.merge", "bf.advance":
		return errRedisReplicaAttached + strings.ToUpper(cmd.name) + " (a bloomkit command); detach it first (REPLICAOF NO ONE on it)"
	case "bf.reserve":
		if len(args) > 4 && nativeOption(args) {
			return errRedisReplicaAttached + "bloomkit's own filters (LAYOUT, WINDOW, GENERATIONS, SEED, START); detach it first (REPLICAOF NO ONE on it)"
		}
	case "bf.loadchunk":
		if len(args) == 4 && string(args[2]) == "1" && isNativeHeader(args[3]) {
			return errRedisReplicaAttached + "bloomkit's own filters (a native filter's dump); detach it first (REPLICAOF NO ONE on it)"
		}
	}
	return ""
}

// markForRedis is told that cmd's write is about to be recorded (db.mu
// held): a record a Redis server could not apply — a bloomkit command, or
// any write while the keyspace holds a native key — is marked for feed,
// so no Redis replica resyncs partially across it. A Redis replica
// attached when a native key appears is disconnected.
func (s *Server) markForRedis(cmd *command) {
	n, _ := s.db.Natives(0)
	if n == 0 && cmd.name != "bf.merge" && cmd.name != "bf.advance" {
		return
	}
	rs := &s.repl
	rs.redisUnsafe = true
	if n > 0 && rs.redisReplicas > 0 {
		rs.mu.Lock()
		var drop []*replica
		for rp := range rs.replicas {
			if rp.redis {
				drop = append(drop, rp)
			}
		}
		rs.mu.Unlock()
		s.log.Warn("disconnecting the Redis replicas: the keyspace now holds a key a Redis server cannot hold", "replicas", len(drop))
		for _, rp := range drop {
			rp.close()
		}
	}
}

// refuseRedisReplica answers a Redis replica's SYNC/PSYNC with msg,
// logging it once a minute (such a replica retries every second).
func (s *Server) refuseRedisReplica(addr, msg string) {
	if now := time.Now().Unix(); now-s.repl.foreignLogged.Load() >= 60 {
		s.repl.foreignLogged.Store(now)
		_, reason, _ := strings.Cut(msg, " ")
		s.log.Warn("refused a Redis replica before any payload; it keeps its data", "addr", addr, "reason", reason)
	}
}

// redisDetach uncounts a Redis replica that was counted (it is gone).
func (s *Server) redisDetach() {
	s.db.Lock()
	s.repl.redisReplicas--
	s.db.Unlock()
}

// writeRedisRDB turns a bloomkit snapshot (size bytes from src) into the
// RDB a Redis replica loads, written to dst: the aux fields Redis writes,
// SELECT 0, every key, EOF and the CRC-64. replid and off are the stream's
// position at the snapshot's point in time, used the memory then.
func (s *Server) writeRedisRDB(dst io.Writer, src io.Reader, size int64, replid string, off int64, used uint64) error {
	w, err := rdb.NewWriter(dst, redisRDBVersion)
	if err != nil {
		return err
	}
	aux := [][2]string{
		{"redis-ver", RedisVersion},
		{"redis-bits", strconv.Itoa(strconv.IntSize)},
		{"ctime", strconv.FormatInt(time.Now().Unix(), 10)},
		{"used-mem", strconv.FormatUint(used, 10)},
		{"repl-stream-db", "0"},
		{"repl-id", replid},
		{"repl-offset", strconv.FormatInt(off, 10)},
		{"aof-base", "0"},
	}
	for _, a := range aux {
		if err := w.Aux(a[0], a[1]); err != nil {
			return err
		}
	}
	if err := w.SelectDB(0); err != nil {
		return err
	}
	err = keyspace.EachSnapshotEntry(src, size, func(key string, e *keyspace.Entry) error {
		exp := e.ExpireAt
		if exp == 0 {
			exp = -1
		}
		switch e.Kind {
		case keyspace.KindString:
			return w.String([]byte(key), e.StrBytes(), exp)
		case keyspace.KindBloom:
			return w.Module([]byte(key), exp, rdb.BloomValue{Bloom: e.BF})
		case keyspace.KindCuckoo:
			return w.Module([]byte(key), exp, rdb.CuckooValue{Cuckoo: e.CF})
		case keyspace.KindCMS:
			return w.Module([]byte(key), exp, rdb.CMSValue{Sketch: e.CMS()})
		case keyspace.KindTopK:
			return w.Module([]byte(key), exp, rdb.TopKValue{TopK: e.TopK()})
		case keyspace.KindTDigest:
			return w.Module([]byte(key), exp, rdb.TDigestValue{Digest: e.TD()})
		}
		return fmt.Errorf("key %q is one of bloomkit's own filters, which a Redis replica cannot hold", key)
	})
	if err != nil {
		return err
	}
	return w.Close()
}

// toRedisRDB replaces the snapshot file f (size bytes, at its end) by the
// RDB a Redis replica loads, in a new temporary file positioned at its
// end; f is closed and removed.
func (s *Server) toRedisRDB(f *os.File, size int64, replid string, off int64, used uint64) (*os.File, error) {
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	if h := testHookRedisRDB.Load(); h != nil {
		(*h)()
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	out, err := s.syncFile()
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	if err = s.writeRedisRDB(bw, f, size, replid, off, used); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		out.Close()
		os.Remove(out.Name())
		return nil, fmt.Errorf("the Redis replica's RDB: %w", err)
	}
	return out, nil
}

// testHookRedisRDB, if set, runs before a Redis replica's RDB is made
// from the snapshot (tests hold the conversion there).
var testHookRedisRDB atomic.Pointer[func()]

// redisAddr is a replica's address for the log.
func redisAddr(rp *replica) string { return net.JoinHostPort(rp.ip, strconv.Itoa(rp.port)) }

// copiesModuleKey reports whether COPY args would copy a key that is not
// a string: its source exists, and its destination is free or REPLACE
// is given.
func (s *Server) copiesModuleKey(args [][]byte) bool {
	e := s.db.GetBytes(args[1])
	if e == nil || e.Kind == keyspace.KindString {
		return false
	}
	if s.db.GetBytes(args[2]) == nil {
		return true
	}
	for _, a := range args[3:] {
		if strings.EqualFold(string(a), "replace") {
			return true
		}
	}
	return false
}
