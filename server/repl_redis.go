package server

// Following a Redis master (Redis + RedisBloom): bloom serve is its
// replica as a Redis replica is. The handshake is the same as with a
// bloom serve master (repl_replica.go); a master that does not know
// REPLCONF bloomkit-run-id is a Redis server, and then:
//
//   - before PSYNC, the parameters RedisBloom creates filters with are read
//     from it (CONFIG GET bf-* cf-* on Redis 8, MODULE LIST's arguments of
//     the bf module on RedisBloom 2.x), so that a BF.ADD of its stream that
//     creates a key creates the filter the master created;
//   - a full sync's payload is an RDB file (from disk, $<len>, or diskless,
//     $EOF:<mark>), read into a fresh keyspace that replaces the old one
//     only once it is complete, as a bloom serve master's snapshot is; with
//     a data directory it becomes the next generation's snapshot first;
//   - a key this server cannot hold (a hash, list, set, sorted set, stream,
//     another module's type, a database other than 0) stops the sync with
//     an error naming the types and how many keys of each, unless
//     replica-ignore-unsupported is yes (then they are skipped and counted);
//   - the stream goes through the one apply path (srcRedisMaster); a
//     command this server does not have, SELECT of another database, or a
//     command that fails here (but a RedisBloom command: RedisBloom
//     replicates some that failed on the master, which changed nothing on
//     either side) stops the link with an error, and the next
//     sync is a full one (the master's data is then read whole again):
//     the replica never goes on silently different from its master.
//
// A Top-K's decays are random draws, RedisBloom's from rand(): a
// TOPK.ADD of the stream that decays a bucket may choose otherwise here,
// as it may on a Redis replica of the same master.
//
// A bloom serve replica of this server (a chain) gets the Redis stream as
// it came; it asks for the Redis master's parameters with REPLCONF
// bloomkit-filter-params, so its filters are the same.
//
// Errors that a retry a second later would meet again (unsupported keys
// or commands) are retried with the growing pause of errFullSyncFailed.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bloomkit/bloomkit/cms"
	"github.com/bloomkit/bloomkit/topk"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
	"github.com/bloomkit/bloomkit/tdigest"
)

// errUnsupported is data or a command of a Redis master that this server
// cannot hold or apply: the link stops, and is tried again after a pause
// that doubles each time (each try costs the master a full sync).
var errUnsupported = errors.New("bloom serve cannot follow this master")

// respValue is one reply of a master during the handshake: a string
// (simple or bulk), an int64, a respError, nil, or a []respValue.
type respValue = any

// respError is an error reply.
type respError string

func (e respError) Error() string { return string(e) }

// readMasterReply reads one RESP2 reply of any type (handshake replies only:
// nesting and sizes are bounded).
func readMasterReply(br *bufio.Reader, depth int) (respValue, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	if line == "" {
		return nil, errors.New("empty reply line from master")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return respError(line[1:]), nil
	case ':':
		n, err := strconv.ParseInt(line[1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad integer reply from master: %q", line)
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n > 1<<20 {
			return nil, fmt.Errorf("bad bulk reply from master: %q", line)
		}
		if n < 0 {
			return nil, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n > 1<<16 || depth > 4 {
			return nil, fmt.Errorf("bad array reply from master: %q", line)
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]respValue, 0, n)
		for range n {
			v, err := readMasterReply(br, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply from master: %q", line)
}

// masterFilterParams are the parameters of a Redis master's RedisBloom
// that decide the filters a command creates; cf-max-expansions is not
// among them: a limit the master already checked stays the widest here.
var masterFilterParams = []int{fpBFErrorRate, fpBFInitialSize, fpBFExpansion, fpCFBucketSize, fpCFInitialSize, fpCFMaxIterations, fpCFExpansion}

// redisMasterFilters reads the filter parameters of a Redis master through
// call (a command on the link, before PSYNC): CONFIG GET on Redis 8, the
// bf module's load arguments (MODULE LIST) on RedisBloom 2.x, whose
// defaults apply to what they leave out. It returns the configuration its
// stream is applied with and where it came from; a master that refuses
// both (an ACL user allowed only replication) leaves RedisBloom's
// defaults, which the note says.
func (s *Server) redisMasterFilters(call func(args ...string) (respValue, error)) (*filterConfig, string, error) {
	params := map[string]string{}
	from := ""
	v, err := call("CONFIG", "GET", "bf-*", "cf-*")
	if err != nil {
		return nil, "", err
	}
	var refused []string
	if arr, ok := v.([]respValue); ok && len(arr) >= 2 {
		for i := 0; i+1 < len(arr); i += 2 {
			name, _ := arr[i].(string)
			val, _ := arr[i+1].(string)
			if p, ok := lookupFilterParam(name); ok && slices.Contains(masterFilterParams, p) {
				params[filterParams[p].name] = val
			}
		}
		from = "CONFIG GET"
	} else if e, ok := v.(respError); ok {
		refused = append(refused, "CONFIG GET: "+string(e))
	}
	if from == "" {
		v, err := call("MODULE", "LIST")
		if err != nil {
			return nil, "", err
		}
		if e, ok := v.(respError); ok {
			refused = append(refused, "MODULE LIST: "+string(e))
		}
		mods, _ := v.([]respValue)
		for _, m := range mods {
			kv, _ := m.([]respValue)
			var name string
			var args []string
			for i := 0; i+1 < len(kv); i += 2 {
				k, _ := kv[i].(string)
				switch k {
				case "name":
					name, _ = kv[i+1].(string)
				case "args":
					as, _ := kv[i+1].([]respValue)
					for _, a := range as {
						sa, _ := a.(string)
						args = append(args, sa)
					}
				}
			}
			if name != "bf" {
				continue
			}
			from = "MODULE LIST"
			if err := redisBloomModuleArgs(args, params); err != nil {
				return nil, "", fmt.Errorf("the master's RedisBloom arguments %q: %w", args, err)
			}
		}
	}
	fc := replayFilterConfig
	for _, i := range masterFilterParams {
		v, ok := params[filterParams[i].name]
		if !ok {
			continue
		}
		next, err := fc.with(i, v)
		if err != nil {
			return nil, "", fmt.Errorf("the master's %s %q: %v", filterParams[i].name, v, err)
		}
		fc = next
	}
	switch {
	case from != "":
	case len(refused) > 0:
		from = "RedisBloom's defaults: the master refused to say (" + strings.Join(refused, "; ") + ")"
	default:
		from = "RedisBloom's defaults: the master has no RedisBloom module"
	}
	return fc, from, nil
}

// loadRedisSync reads a Redis master's full-sync payload (an RDB file)
// into a fresh keyspace and swaps it in once it is complete; with a data
// directory, it first becomes the next generation's snapshot (so the
// directory holds the old chain or the new one at every instant). No lock
// is held while the payload is received.
func (s *Server) loadRedisSync(l *masterLink, br *bufio.Reader, replid string, moff int64) error {
	l.state.Store(linkSync)
	line := ""
	var err error
	for line == "" {
		if line, err = readLine(br); err != nil {
			return fmt.Errorf("reading the sync payload's length: %w", err)
		}
	}
	var src *bufio.Reader
	var mark string
	size := int64(-1)
	var limited *io.LimitedReader
	switch {
	case strings.HasPrefix(line, "$EOF:"):
		// Diskless: the RDB ends with its EOF opcode and checksum,
		// followed by the 40-byte mark; the reader consumes exactly the
		// RDB's bytes from the link's buffer.
		mark = line[5:]
		if len(mark) != 40 {
			return fmt.Errorf("bad diskless sync mark from master: %q", line)
		}
		src = br
	case strings.HasPrefix(line, "$"):
		size, err = strconv.ParseInt(line[1:], 10, 64)
		if err != nil || size < 9 {
			return fmt.Errorf("bad sync payload length from master: %q", line)
		}
		limited = &io.LimitedReader{R: br, N: size}
		src = bufio.NewReaderSize(limited, 64<<10)
	default:
		return fmt.Errorf("bad sync payload header from master: %q", line)
	}
	s.log.Info("MASTER <-> REPLICA sync: receiving the Redis master's RDB", "bytes", size, "diskless", mark != "", "master_replid", replid, "offset", moff)
	l.syncing.Store(true)
	l.syncTotal.Store(size)
	l.syncRead.Store(0)
	defer l.syncing.Store(false)
	start := time.Now()
	if h := testHookSyncPayload.Load(); h != nil {
		(*h)()
	}
	fresh := keyspace.New(0, s.cfg.Now)
	skipped := map[string]int{}
	if err := s.readRedisRDB(l, src, fresh, skipped); err != nil {
		return fmt.Errorf("reading the master's RDB: %w", err)
	}
	switch {
	case mark != "":
		var got [40]byte
		if _, err := io.ReadFull(br, got[:]); err != nil {
			return fmt.Errorf("reading the diskless sync's end mark: %w", err)
		}
		if string(got[:]) != mark {
			return fmt.Errorf("the diskless sync's end mark differs from its start mark (%q): the RDB stream was damaged", got)
		}
	case limited.N > 0 || src.Buffered() > 0:
		return fmt.Errorf("the master's RDB ended %d bytes before its announced length", limited.N+int64(src.Buffered()))
	}
	n := countSkipped(skipped)
	if n > 0 {
		what := describeSkipped(skipped)
		if !s.repl.ignoreUnsupported.Load() {
			return fmt.Errorf("%w: the master holds %d keys this server cannot hold (%s); nothing was loaded. Remove or move them on the master, or set replica-ignore-unsupported yes to follow it without them", errUnsupported, n, what)
		}
		s.log.Warn("the master holds keys this server cannot hold; skipped (replica-ignore-unsupported yes)", "keys", n, "types", what)
	}
	l.ignored.Store(int64(n))
	if s.aof == nil {
		fresh.PrepareFor(s.db)
		if err := s.swapIn(l, fresh, replid, moff, nil, 0); err != nil {
			return err
		}
	} else if err := s.persistRedisSync(l, fresh, replid, moff); err != nil {
		return err
	}
	s.log.Info("MASTER <-> REPLICA sync: the Redis master's RDB loaded", "keys", s.db.Len(), "skipped", n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// readRedisRDB reads an RDB stream into fresh: strings and the module
// values of RedisBloom's Bloom and cuckoo filters, Count-Min Sketches,
// Top-Ks and t-digests; every other key
// (another type, another module's, another database) is counted in
// skipped by kind.
func (s *Server) readRedisRDB(l *masterLink, src *bufio.Reader, fresh *keyspace.DB, skipped map[string]int) error {
	opts := rdb.Options{MaxString: uint64(s.cfg.MaxBulk), Reuse: true}
	opts.ResizeDB = func(db int, keys, _ uint64) {
		if db == 0 {
			fresh.Reserve(int(min(keys, math.MaxInt32)))
		}
	}
	rdb.AddRedisBloomDecoders(&opts, fresh.AllowFn())
	rdb.AddSketchDecoders(&opts, fresh.AllowFn())
	rd, err := rdb.NewReader(src, opts)
	if err != nil {
		return err
	}
	for {
		e, err := rd.Next()
		l.syncRead.Store(rd.Offset())
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if e.Kind != rdb.KindKey {
			continue
		}
		var exp int64
		if e.HasExpire {
			// Kept even when past: the master's DEL removes it, as on
			// a Redis replica.
			exp = max(e.ExpireAt, 1)
		}
		switch {
		case e.DB != 0:
			skipped["in database "+strconv.Itoa(e.DB)]++
		case e.Err != nil:
			if err := skipUnread(s, e, skipped); err != nil {
				return err
			}
		case e.Type == rdb.TypeString:
			fresh.SetString(owned(e.Key), owned(e.String), exp)
		default:
			ent, ok := moduleEntry(e.Value)
			if !ok {
				skipped["module type "+e.Module]++
				continue
			}
			ent.ExpireAt = exp
			if t := ent.TopK(); t != nil {
				// The decoder's allow counted its arrays; the keyspace
				// counts all of a Top-K.
				fresh.Resized(8*uint64(t.Width())*uint64(t.Depth())+24*uint64(t.K()), t.MemUsage())
			}
			fresh.Put(owned(e.Key), ent)
		}
	}
}

// owned is b as a string without a copy, for bytes that nothing else
// holds or changes: the RDB reader's keys and values, made anew for each
// record (rdb.Entry), so a copy would only double the allocations of
// every key.
func owned(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// skipUnread counts in skipped a key of the master's whose value the
// reader passed over (e.Err set), or returns e.Err when that is no such
// key. Apart from readRedisRDB's loop: errors.As's targets escape, and
// there they would cost every key two allocations.
func skipUnread(s *Server, e *rdb.Entry, skipped map[string]int) error {
	var te *rdb.TypeError
	var me *rdb.ModuleError
	switch {
	case errors.As(e.Err, &te):
		if te.Module != "" {
			skipped["module type "+te.Module]++
		} else {
			skipped[te.Name]++
		}
	case errors.As(e.Err, &me):
		if skipped[me.Module+" values that could not be read"] == 0 {
			s.log.Warn("a module value of the master's could not be read", "key", trimArg(e.Key), "module", me.Module, "err", me.Err)
		}
		skipped[me.Module+" values that could not be read"]++
	default:
		return e.Err
	}
	return nil
}

// moduleEntry is a decoded module value as a keyspace entry.
func moduleEntry(v any) (*keyspace.Entry, bool) {
	switch f := v.(type) {
	case *redisbloom.Bloom:
		return &keyspace.Entry{Kind: keyspace.KindBloom, BF: f}, true
	case *redisbloom.Cuckoo:
		return &keyspace.Entry{Kind: keyspace.KindCuckoo, CF: f}, true
	case *tdigest.Digest:
		return keyspace.NewTDigest(f, 0), true
	case *cms.Sketch:
		return keyspace.NewCMS(f, 0), true
	case *topk.TopK:
		return keyspace.NewTopK(f, 0), true
	}
	return nil, false
}

// persistRedisSync makes fresh the next generation's snapshot, then the
// keyspace (saveMu serialises it with every other snapshot).
func (s *Server) persistRedisSync(l *masterLink, fresh *keyspace.DB, replid string, moff int64) error {
	s.persist.saveMu.Lock()
	defer s.persist.saveMu.Unlock()
	gen, lf, undo, err := s.syncGeneration()
	if err != nil {
		return err
	}
	fresh.Lock()
	snap := fresh.BeginSnapshot(gen)
	fresh.Unlock()
	_, err = aof.WriteSnapshot(s.dir, gen, func(w io.Writer) error { return fresh.WriteSnapshot(w, snap) })
	fresh.Lock()
	fresh.EndSnapshot(snap)
	fresh.Unlock()
	if err != nil {
		undo()
		return fmt.Errorf("full sync: %w", err)
	}
	return s.adoptSync(l, fresh, replid, moff, lf, gen, undo)
}

func countSkipped(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// describeSkipped lists the kinds of keys skipped with their counts,
// most first: "hash: 3 keys, list: 1 key".
func describeSkipped(m map[string]int) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if m[kinds[i]] != m[kinds[j]] {
			return m[kinds[i]] > m[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		unit := "keys"
		if m[k] == 1 {
			unit = "key"
		}
		parts[i] = fmt.Sprintf("%s: %d %s", k, m[k], unit)
	}
	return strings.Join(parts, ", ")
}

// redisStreamCheck is what a Redis master's stream may hold beyond the
// commands it applies: it returns an error (wrapping errUnsupported) for
// a command this server cannot apply exactly, before any of a
// transaction's commands runs.
func redisStreamCheck(args [][]byte) error {
	if redisPassedOver(args[0]) {
		return nil
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		return fmt.Errorf("%w: the master's stream holds %s, a command bloom serve does not have; the link stops so as not to go on different from the master", errUnsupported, strings.ToUpper(trimArg(args[0])))
	}
	switch cmd.name {
	case "select":
		if len(args) != 2 || string(args[1]) != "0" {
			db := ""
			if len(args) > 1 {
				db = trimArg(args[1])
			}
			return fmt.Errorf("%w: the master's stream selects database %s; bloom serve holds database 0 only", errUnsupported, db)
		}
	case "ping", "replconf", "publish":
	default:
		if !cmd.write {
			return fmt.Errorf("%w: the master's stream holds %s, which bloom serve does not apply from a master", errUnsupported, strings.ToUpper(cmd.name))
		}
	}
	return nil
}

// streamFilters is the filter configuration the stream this server passes
// to its replicas creates filters with: its master's, when that is a
// Redis master or a bloom serve passing one on; nil for RedisBloom's
// defaults (a master's own stream logs the parameters it used).
func (s *Server) streamFilters() *filterConfig {
	if l := s.repl.following.Load(); l != nil {
		return l.filter.Load()
	}
	return nil
}

// encodeMasterFilters is REPLCONF bloomkit-filter-params' answer:
// "name=value" pairs of masterFilterParams, or "OK" for none.
func encodeMasterFilters(fc *filterConfig) string {
	if fc == nil {
		return "OK"
	}
	parts := make([]string, len(masterFilterParams))
	for i, p := range masterFilterParams {
		parts[i] = filterParams[p].name + "=" + fc.str[p]
	}
	return strings.Join(parts, " ")
}

// decodeMasterFilters reads a master's answer to REPLCONF
// bloomkit-filter-params: nil for "+OK" or an error (a master that does
// not know the option).
func decodeMasterFilters(line string) (*filterConfig, error) {
	if !strings.HasPrefix(line, "+") || line == "+OK" {
		return nil, nil
	}
	fc := replayFilterConfig
	for _, f := range strings.Fields(line[1:]) {
		name, val, _ := strings.Cut(f, "=")
		i, ok := lookupFilterParam(name)
		if !ok || !slices.Contains(masterFilterParams, i) {
			return nil, fmt.Errorf("the master's filter parameters %q: unknown %q", line, name)
		}
		next, err := fc.with(i, val)
		if err != nil {
			return nil, fmt.Errorf("the master's filter parameters %q: %v", line, err)
		}
		fc = next
	}
	return fc, nil
}

// redisPassedOver reports the commands of a Redis master's stream that
// hold no data bloom serve keeps, passed over: SPUBLISH (a message to
// shard channels, which bloom serve has not) and FUNCTION (LOAD, DELETE,
// FLUSH, RESTORE: libraries of code; bloom serve runs none, and FCALL's
// writes reach the stream as their effects). The RDB's function
// libraries are passed over likewise.
func redisPassedOver(name []byte) bool {
	return strings.EqualFold(string(name), "spublish") || strings.EqualFold(string(name), "function")
}

// unsupportedTypeCommand is the Redis type a write command of a Redis
// master's stream works on, when it is a type this server does not hold
// (a hash, list, set, sorted set or stream),
// or "". With replica-ignore-unsupported yes such a command is passed over
// as the keys it works on were skipped (passOverUnsupported). Commands
// on strings this server does not have (INCR, APPEND, PFADD, …) are not
// among them: they change keys it holds.
func unsupportedTypeCommand(name []byte) string {
	n := strings.ToLower(string(name))
	return unsupportedWrites[n] // "" for a type this server holds
}

var unsupportedWrites = func() map[string]string {
	m := map[string]string{}
	for t, names := range map[string]string{
		"hash":   "hset hsetnx hmset hdel hincrby hincrbyfloat hexpire hpexpire hexpireat hpexpireat hpersist hgetdel hgetex hsetex",
		"list":   "lpush rpush lpushx rpushx lpop rpop linsert lset lrem ltrim lmove rpoplpush blpop brpop blmove brpoplpush lmpop blmpop",
		"set":    "sadd srem spop smove sinterstore sunionstore sdiffstore",
		"zset":   "zadd zincrby zrem zremrangebyscore zremrangebyrank zremrangebylex zpopmin zpopmax bzpopmin bzpopmax zunionstore zinterstore zdiffstore zrangestore zmpop bzmpop geoadd georadius georadiusbymember geosearchstore",
		"stream": "xadd xdel xtrim xgroup xack xclaim xautoclaim xsetid xreadgroup",
	} {
		for _, n := range strings.Fields(names) {
			m[n] = t
		}
	}
	return m
}()

// passOverUnsupported checks that a command of a type this server does
// not hold touches none of its keys (db.mu held): no argument names a key
// it holds. One that does (a ZUNIONSTORE onto a string key, say) would
// change what this server holds, and stops the link.
func (s *Server) passOverUnsupported(args [][]byte) error {
	for _, a := range args[1:] {
		if s.db.Lookup(string(a)) != nil {
			return fmt.Errorf("%w: the master's stream holds %s naming %q, a key this server holds; a %s command would change it", errUnsupported,
				strings.ToUpper(trimArg(args[0])), trimArg(a), unsupportedTypeCommand(args[0]))
		}
	}
	return nil
}
