package server

// OBJECT and DEBUG: what Redis 7 answers about a key's representation,
// and the DEBUG subcommands an operator or a test suite uses (SLEEP,
// OBJECT), behind enable-debug-command as in Redis.

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
)

// objectKeys is OBJECT's key: its third argument, looked at without its
// value (Redis's key flags RO without ACCESS: a pattern must match).
func objectKeys(args [][]byte, visit func(int, acl.Perm)) {
	if len(args) >= 3 {
		switch strings.ToLower(string(args[1])) {
		case "encoding", "freq", "idletime", "refcount":
			visit(2, 0)
		}
	}
}

// sharedRefcount is the reference count Redis reports for its shared
// integers (OBJ_SHARED_REFCOUNT), 0 to 9999.
const sharedRefcount = math.MaxInt32

// errNoLFU is Redis's OBJECT FREQ error under any policy but an LFU one;
// maxmemory-policy is noeviction here.
const errNoLFU = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Prints this help.",
}

// OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT key | HELP (db.mu held). The key
// is looked at without counting an access, as Redis's LOOKUP_NOTOUCH.
func cmdObject(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	switch sub {
	case "help":
		if len(args) != 2 {
			r.Error(wrongArity("object|help"))
			return
		}
		r.Array(len(objectHelp))
		for _, l := range objectHelp {
			r.Simple(l)
		}
		return
	case "encoding", "freq", "idletime", "refcount":
	default:
		r.Error("ERR unknown subcommand '" + trimArg(args[1]) + "'. Try OBJECT HELP.")
		return
	}
	if len(args) != 3 {
		r.Error(wrongArity("object|" + sub))
		return
	}
	e := s.db.Peek(string(args[2]))
	if e == nil {
		r.Null()
		return
	}
	switch sub {
	case "encoding":
		enc, _ := objectEncoding(e)
		r.BulkString(enc)
	case "refcount":
		_, ref := objectEncoding(e)
		r.Int(ref)
	case "idletime":
		r.Int(s.db.IdleSeconds(e))
	case "freq":
		r.Error(errNoLFU)
	}
}

// objectEncoding is OBJECT ENCODING and REFCOUNT of e as Redis 7 answers
// them: a string is "int" when it is an integer Redis would store as one
// (a shared object for 0 to 9999), "embstr" up to 44 bytes, "raw" beyond;
// a filter is a module value, which Redis reports as "raw".
func objectEncoding(e *keyspace.Entry) (string, int64) {
	if e.Kind != keyspace.KindString {
		return "raw", 1
	}
	v := e.StrBytes()
	if n, ok := redisInteger(v); ok {
		if n >= 0 && n < 10000 {
			return "int", sharedRefcount
		}
		return "int", 1
	}
	if len(v) <= 44 {
		return "embstr", 1
	}
	return "raw", 1
}

// redisInteger parses v as Redis's string2ll does for its int encoding: an
// optional '-', digits without a leading zero (0 itself excepted), at most
// 20 bytes, within int64; "-0" and "+1" are not integers.
func redisInteger(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 20 {
		return 0, false
	}
	if len(v) == 1 && v[0] == '0' {
		return 0, true
	}
	digits := v
	if v[0] == '-' {
		digits = v[1:]
	}
	if len(digits) == 0 || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	for _, b := range digits {
		if b < '0' || b > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// debugAllowed is Redis's check of a protected command (DEBUG) against
// enable-debug-command: yes, or local for a client on the loopback
// interface or a Unix socket. It returns the refusal, or "".
func (s *Server) debugAllowed(c *Session) string {
	switch s.cfg.EnableDebugCommand {
	case "yes":
		return ""
	case "local":
		if localSession(c) {
			return ""
		}
	}
	return `ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.`
}

// localSession reports whether c is on this machine: the loopback
// interface, a Unix socket, or no network (Server.Do).
func localSession(c *Session) bool {
	if c.Addr == "" {
		return true
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		host = c.Addr
	}
	if strings.HasPrefix(host, "/") {
		return true // a Unix socket's path
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

var debugHelp = []string{
	"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"OBJECT <key>",
	"    Show low level info about `key` and associated value.",
	"RELOAD",
	"    Save the RDB on disk and reload it back to memory.",
	"SLEEP <seconds>",
	"    Stop the server for <seconds>. Decimals allowed.",
	"HELP",
	"    Prints this help.",
}

// DEBUG OBJECT key | SLEEP seconds | RELOAD | HELP. It runs without the
// keyspace lock and takes it for SLEEP (which stops every command, as it
// stops Redis) and OBJECT.
func cmdDebug(s *Server, c *Session, args [][]byte, r *Reply) {
	sub := strings.ToLower(string(args[1]))
	if sub == "sleep" || sub == "object" {
		unlock := s.lockDB(c)
		defer unlock()
	}
	switch {
	case sub == "reload":
		switch {
		case len(args) > 2:
			r.Error("ERR DEBUG RELOAD's options (MERGE, NOFLUSH, NOSAVE) are not supported: the keyspace must stay what the log holds")
		case c.inExec:
			r.Error("ERR DEBUG RELOAD cannot run inside MULTI")
		case s.loadingNow():
			r.Error(errLoading)
		case s.cfg.NoPersistence:
			r.Error("ERR DEBUG RELOAD needs a data directory: this server keeps nothing on disk")
		default:
			if err := s.debugReload(); err != nil {
				s.log.Error("DEBUG RELOAD failed", "err", err)
				r.Error("ERR Error trying to load the RDB dump, check server logs.")
				return
			}
			r.OK()
		}
	case sub == "help" && len(args) == 2:
		r.Array(len(debugHelp))
		for _, l := range debugHelp {
			r.Simple(l)
		}
	case sub == "sleep" && len(args) == 3:
		// Redis reads the seconds with atof: what does not parse is 0.
		secs, err := strconv.ParseFloat(string(args[2]), 64)
		if err != nil || secs < 0 || math.IsNaN(secs) {
			secs = 0
		}
		time.Sleep(time.Duration(math.Min(secs, 1e9) * float64(time.Second)))
		r.OK()
	case sub == "object" && len(args) == 3:
		e := s.db.Peek(string(args[2]))
		if e == nil {
			r.Error("ERR no such key")
			return
		}
		enc, ref := objectEncoding(e)
		r.Simple(fmt.Sprintf("Value at:%p refcount:%d encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d",
			e, ref, enc, serializedLength(e), e.LRU(), s.db.IdleSeconds(e)))
	default:
		r.Error("ERR unknown subcommand or wrong number of arguments for '" + trimArg(args[1]) + "'. Try DEBUG HELP.")
	}
}

// debugReload is DEBUG RELOAD: a snapshot is saved, read back into a
// keyspace of its own and swapped in, provided nothing changed since the
// snapshot's point in time (the change counter, which every write moves,
// is the same); else it tries again, a few times. The keyspace then is
// what the snapshot file holds, as after Redis's reload.
func (s *Server) debugReload() error {
	p := &s.persist
	for range 5 {
		if err := s.saveInForeground(); err != nil {
			return fmt.Errorf("save: %w", err)
		}
		p.saveMu.Lock()
		gen, dirty := p.gen.Load(), p.dirtyAtSave.Load()
		fresh := keyspace.New(0, s.cfg.Now)
		f, err := s.dir.Open(SnapshotName(gen))
		if err == nil {
			_, _, err = fresh.ReadSnapshot(f, s.dir.Path(SnapshotName(gen)))
			f.Close()
		}
		if err != nil {
			p.saveMu.Unlock()
			return fmt.Errorf("load: %w", err)
		}
		fresh.PrepareFor(s.db)
		s.db.WaitMerges()
		s.db.Lock()
		same := s.db.Dirty() == dirty
		if same {
			s.touchAllWatched()
			s.db.FinishMerges(nil)
			s.db.TakeOver(fresh)
			p.dirtyAtSave.Store(s.db.Dirty()) // the keyspace is the snapshot
		}
		s.db.Unlock()
		p.saveMu.Unlock()
		if same {
			return nil
		}
		fresh.Flush() // written to since: its arrays are released
	}
	return errors.New("the keyspace kept changing while it was saved")
}

// serializedLength is DEBUG OBJECT's serializedlength, Redis's
// rdbSavedObjectLen: the length of the value's RDB encoding, which is
// DUMP's payload without its type byte, version and checksum. bloomkit's
// own filters, which have no RDB encoding, give the bytes of their value.
func serializedLength(e *keyspace.Entry) int64 {
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
		payload, err = rdb.DumpModule(rdb.TDigestValue{Digest: e.TD()}, rdb.DumpVersion)
	}
	if err != nil || len(payload) < 11 {
		return int64(e.DataBytes())
	}
	return int64(len(payload) - 11)
}
