package server

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
	"github.com/bloomkit/bloomkit/server/internal/rdb"
)

// The differential replay test: random streams of every write command —
// expiries in the past and the future, PERSIST, RENAME, COPY, DEL, FLUSHALL,
// MULTI/EXEC with commands that fail, LOADCHUNK, BF.MERGE, native and
// window keys on a clock that also goes backwards, --maxmemory hits,
// snapshots taken meanwhile — then a crash and a restart from the log (and
// from a snapshot plus the log): every key's type, TTL, dump (SCANDUMP
// bytes), BF.INFO/CF.INFO and BF.CARD must equal what the clients saw
// just before the crash.
//
// The replica leg: a replica follows the master through every round (a
// full sync after each restart, then the stream), and before each crash
// it must answer every observation as the master does and hold a
// byte-equal keyspace: what the master logged and streamed reproduces
// what its clients saw.
//
// The crash is the in-process equivalent of kill -9 with appendfsync
// always: Close writes no snapshot, and every acknowledged write is in the
// log already. Each round goes on from the restarted server, so replay of
// replayed state is covered too.
//
// A short run is part of `make test`; BLOOMKIT_REPLAY_TIME=5m (`make
// test-long`) runs rounds for that long.

var (
	drKeys  = []string{"a", "b", "c", "d", "e", "f"}
	drItems = []string{"x", "y", "z", "w", "v", "u", "t", "s", "r", "q", "p", "o"}
)

type diffReplay struct {
	t     *testing.T
	rng   *rand.Rand
	clock *fakeClock
	cfg   Config
	s     *Server
	rc    *rawConn
	// rc2 sends a BF.MERGE now and then without waiting for its reply
	// (pending), so that rc's next commands meet the merge running.
	rc2     *rawConn
	pending bool
	// replica follows the master; rrc is a client of it.
	replica *Server
	rrc     *rawConn
	merged  int      // BF.MERGEs that succeeded
	log     []string // the commands of this round (printed on failure)
}

// settle reads the reply rc2 owes.
func (d *diffReplay) settle() {
	if d.pending {
		if d.rc2.read() == "+OK" {
			d.merged++
		}
		d.pending = false
	}
}

func (d *diffReplay) key() string  { return drKeys[d.rng.Intn(len(drKeys))] }
func (d *diffReplay) item() string { return drItems[d.rng.Intn(len(drItems))] }

func (d *diffReplay) items(n int) []string {
	out := make([]string, n)
	for i := range out {
		if d.rng.Intn(8) == 0 {
			// a run of fresh items, which can hit --maxmemory
			out[i] = "n" + strconv.Itoa(d.rng.Intn(1<<30))
		} else {
			out[i] = d.item()
		}
	}
	return out
}

func (d *diffReplay) do(args ...string) string {
	d.log = append(d.log, strings.Join(args, " "))
	return d.rc.do(args...)
}

// drPayloads are DUMP payloads RESTORE takes in the random streams: a
// string, a Bloom chain grown to two links, a cuckoo filter.
var drPayloads = func() []string {
	b, _ := redisbloom.NewBloom(10, 0.01, 2, false, nil)
	c, _ := redisbloom.NewCuckoo(16, 2, 20, 1, nil)
	for i := range 25 {
		b.Add([]byte(drItems[i%len(drItems)] + strconv.Itoa(i)))
		c.Insert([]byte(drItems[i%len(drItems)]))
	}
	bp, _ := rdb.DumpModule(rdb.BloomValue{Bloom: b}, rdb.DumpVersion)
	cp, _ := rdb.DumpModule(rdb.CuckooValue{Cuckoo: c}, 10)
	return []string{string(rdb.DumpString([]byte("restored"), 10)), string(bp), string(cp)}
}()

// writeCmd is one random write command (or a read that may expire a key).
func (d *diffReplay) writeCmd() []string {
	r := d.rng
	k := d.key()
	nowMs := d.clock.Now().UnixMilli()
	switch r.Intn(31) {
	case 0, 27:
		if r.Intn(2) == 0 {
			return []string{"BF.RESERVE", k, "0.01", "1000"} // mergeable with its like
		}
		opts := [][]string{nil, {"NONSCALING"}, {"EXPANSION", "1"}, {"EXPANSION", "4"}}
		return append([]string{"BF.RESERVE", k, []string{"0.01", "0.001", "0.1"}[r.Intn(3)], []string{"50", "100", "1000"}[r.Intn(3)]}, opts[r.Intn(len(opts))]...)
	case 1:
		seed := []string{"7", "random"}[r.Intn(2)]
		return []string{"BF.RESERVE", k, "0.01", "200", "LAYOUT", []string{"blocked", "classic"}[r.Intn(2)], "SEED", seed}
	case 2:
		seed := []string{"7", "random"}[r.Intn(2)]
		return []string{"BF.RESERVE", k, "0.01", "200", "WINDOW", "4s", "GENERATIONS", "4", "SEED", seed}
	case 3, 4:
		return []string{"BF.ADD", k, d.item()}
	case 5, 6:
		return append([]string{"BF.MADD", k}, d.items(1+r.Intn(40))...)
	case 7:
		opts := []string{"BF.INSERT", k}
		if r.Intn(2) == 0 {
			opts = append(opts, "CAPACITY", "30", "ERROR", "0.05")
		}
		if r.Intn(4) == 0 {
			opts = append(opts, "NOCREATE")
		}
		if r.Intn(4) == 0 {
			opts = append(opts, "NONSCALING")
		}
		return append(append(opts, "ITEMS"), d.items(1+r.Intn(60))...)
	case 8:
		return []string{"CF.RESERVE", k, []string{"4", "64", "512"}[r.Intn(3)], "BUCKETSIZE", "2", "EXPANSION", []string{"0", "1", "2"}[r.Intn(3)]}
	case 9:
		return []string{[]string{"CF.ADD", "CF.ADDNX"}[r.Intn(2)], k, d.item()}
	case 10:
		cmd := []string{[]string{"CF.INSERT", "CF.INSERTNX"}[r.Intn(2)], k}
		if r.Intn(2) == 0 {
			cmd = append(cmd, "CAPACITY", "8")
		}
		return append(append(cmd, "ITEMS"), d.items(1+r.Intn(50))...)
	case 11:
		return []string{"CF.DEL", k, d.item()}
	case 12:
		return []string{"CF.COMPACT", k}
	case 13:
		switch r.Intn(4) {
		case 0:
			return []string{"EXPIRE", k, strconv.Itoa(r.Intn(8) - 3)}
		case 1:
			return []string{"PEXPIRE", k, strconv.Itoa(r.Intn(8000) - 2000)}
		case 2:
			return []string{"EXPIREAT", k, strconv.FormatInt(nowMs/1000+int64(r.Intn(8)-3), 10)}
		}
		cmd := []string{"PEXPIREAT", k, strconv.FormatInt(nowMs+int64(r.Intn(8000)-2000), 10)}
		if r.Intn(3) == 0 {
			cmd = append(cmd, []string{"NX", "XX", "GT", "LT"}[r.Intn(4)])
		}
		return cmd
	case 14:
		return []string{"PERSIST", k}
	case 15:
		return []string{"RENAME", k, d.key()}
	case 16:
		return []string{[]string{"DEL", "UNLINK"}[r.Intn(2)], k, d.key()}
	case 17:
		if r.Intn(4) == 0 {
			return []string{[]string{"FLUSHALL", "FLUSHDB"}[r.Intn(2)], []string{"SYNC", "ASYNC"}[r.Intn(2)]}
		}
		return []string{"EXISTS", k}
	case 18:
		return []string{"BF.MERGE", k, d.key(), d.key()}
	case 19:
		return []string{"BF.ADVANCE", k, strconv.FormatInt(d.clock.Now().UnixNano()/int64(time.Second)-int64(r.Intn(3)), 10)}
	case 20:
		cmd := []string{"SET", k, d.item()}
		switch r.Intn(4) {
		case 0:
			cmd = append(cmd, "PX", strconv.Itoa(1+r.Intn(5000)))
		case 1:
			cmd = append(cmd, "PXAT", strconv.FormatInt(nowMs+int64(r.Intn(6000)-2000), 10))
		case 2:
			cmd = append(cmd, "KEEPTTL")
		}
		return cmd
	case 21:
		return []string{"GETDEL", k}
	case 22:
		return []string{"MSET", k, d.item(), d.key(), d.item()}
	case 23:
		return []string{"BF.EXISTS", k, d.item()} // a read: may expire the key
	case 24, 25:
		return []string{"BF.ADD", k, "n" + strconv.Itoa(r.Intn(1<<30))}
	case 26:
		return []string{"CF.ADD", k, "n" + strconv.Itoa(r.Intn(1<<30))}
	case 28:
		if r.Intn(2) == 0 {
			return []string{"COPY", k, d.key(), "REPLACE"}
		}
		return []string{"COPY", k, d.key()}
	case 29:
		p := drPayloads[r.Intn(len(drPayloads))]
		var cmd []string
		switch r.Intn(3) {
		case 0:
			cmd = []string{"RESTORE", k, "0", p}
		case 1:
			cmd = []string{"RESTORE", k, strconv.Itoa(1 + r.Intn(5000)), p}
		default: // an absolute expiry, perhaps past: nothing stored, a DEL if REPLACE removed a key
			cmd = []string{"RESTORE", k, strconv.FormatInt(nowMs+int64(r.Intn(6000)-2000), 10), p, "ABSTTL"}
		}
		if r.Intn(2) == 0 {
			cmd = append(cmd, "REPLACE")
		}
		return cmd
	}
	return []string{"BF.CARD", k}
}

// copyKey copies src to dst with SCANDUMP and LOADCHUNK, as `bloom pull`
// and `bloom push` do (a missing or wrongly typed src stops it).
func (d *diffReplay) copyKey(prefix, src, dst string) {
	d.do("DEL", dst)
	it := "0"
	for n := 0; n < 10000; n++ {
		got := d.do(prefix+".SCANDUMP", src, it)
		next, data, ok := parseDumpReply(got)
		if !ok || next == "0" {
			return
		}
		if r := d.do(prefix+".LOADCHUNK", dst, next, data); !strings.HasPrefix(r, "+") {
			return
		}
		it = next
	}
}

// parseDumpReply splits a SCANDUMP reply [:next "bytes"].
func parseDumpReply(s string) (next, data string, ok bool) {
	if !strings.HasPrefix(s, "[:") {
		return "", "", false
	}
	sp := strings.IndexByte(s, ' ')
	if sp < 0 {
		return "", "", false
	}
	next = s[2:sp]
	q := s[sp+1 : len(s)-1]
	if q == "nil" {
		return next, "", true
	}
	data, err := strconv.Unquote(q)
	return next, data, err == nil
}

// step runs one random action.
func (d *diffReplay) step() {
	r := d.rng
	switch n := r.Intn(100); {
	case n < 5:
		// the clock: mostly forward, sometimes back
		d.clock.Add(time.Duration(r.Intn(3000)-600) * time.Millisecond)
	case n < 8:
		d.do("MULTI")
		for i := r.Intn(5); i >= 0; i-- {
			if r.Intn(15) == 0 {
				d.do("NOSUCHCOMMAND", d.key()) // EXECABORT
			}
			d.do(d.writeCmd()...)
		}
		d.do("EXEC")
	case n < 10:
		d.copyKey([]string{"BF", "CF"}[r.Intn(2)], d.key(), d.key())
	case n < 11:
		d.do("BGSAVE")
	case n < 12:
		if r.Intn(3) == 0 {
			d.do("SAVE")
		}
	case n < 14:
		// A merge that the next commands meet running: fresh mergeable
		// filters, the merge from the second client, then adds to both.
		d.settle()
		dst, src := d.key(), d.key()
		d.do("DEL", dst, src)
		d.do("BF.RESERVE", src, "0.01", "1000")
		d.do(append([]string{"BF.MADD", src}, d.items(8)...)...)
		if r.Intn(2) == 0 {
			d.do("BF.RESERVE", dst, "0.01", "1000")
			d.do(append([]string{"BF.MADD", dst}, d.items(4)...)...)
		}
		d.log = append(d.log, "(second client) BF.MERGE "+dst+" "+src)
		d.rc2.send("BF.MERGE", dst, src)
		d.pending = true
		for i := r.Intn(4); i >= 0; i-- {
			d.do("BF.ADD", []string{dst, src}[r.Intn(2)], d.item())
		}
	case n < 16:
		d.settle()
		args := []string{"BF.MERGE", d.key(), d.key()}
		if r.Intn(2) == 0 {
			args = append(args, d.key())
		}
		d.log = append(d.log, "(second client) "+strings.Join(args, " "))
		d.rc2.send(args...)
		d.pending = true
	default:
		d.do(d.writeCmd()...)
	}
}

// observe is everything a client can see of the keyspace.
func (d *diffReplay) observe(rc *rawConn) []string {
	var out []string
	keys := rc.do("KEYS", "*")
	ks := strings.Fields(strings.Trim(keys, "[]"))
	sort.Strings(ks)
	out = append(out, "KEYS "+strings.Join(ks, " "))
	for _, k := range drKeys {
		typ := rc.do("TYPE", k)
		out = append(out, k+" TYPE "+typ, k+" PTTL "+rc.do("PTTL", k))
		prefix := ""
		switch typ {
		case "+MBbloom--", "+BKbloom--":
			prefix = "BF"
			out = append(out, k+" BF.INFO "+rc.do("BF.INFO", k), k+" BF.CARD "+rc.do("BF.CARD", k))
		case "+MBbloomCF":
			prefix = "CF"
			out = append(out, k+" CF.INFO "+rc.do("CF.INFO", k))
		case "+string":
			out = append(out, k+" GET "+rc.do("GET", k))
		}
		if prefix == "" {
			continue
		}
		var dump strings.Builder
		it := "0"
		for n := 0; n < 100000; n++ {
			got := rc.do(prefix+".SCANDUMP", k, it)
			next, data, ok := parseDumpReply(got)
			if !ok {
				dump.WriteString(got)
				break
			}
			fmt.Fprintf(&dump, "%s:%x;", next, data)
			if next == "0" {
				break
			}
			it = next
		}
		out = append(out, k+" DUMP "+dump.String())
	}
	return out
}

func (d *diffReplay) start() {
	d.s = startServer(d.t, d.cfg)
	d.cfg.Dir = d.s.cfg.Dir
	d.rc = dialRaw(d.t, d.s.Addr())
	d.rc2 = dialRaw(d.t, d.s.Addr())
	if d.replica == nil {
		d.replica = startServer(d.t, Config{AppendFsync: "always", Now: d.cfg.Now, AutoSaveLogBytes: -1, Logger: quietLogger()})
		d.rrc = dialRaw(d.t, d.replica.Addr())
	}
	h, p := hostPort(d.t, d.s)
	if got := d.rrc.do("REPLICAOF", h, p); got != "+OK" {
		d.t.Fatalf("REPLICAOF: %s", got)
	}
	waitSynced(d.t, d.rc, d.rrc)
}

// same reports (as test errors) where got differs from what the clients
// saw.
func (d *diffReplay) same(where string, want, got []string) bool {
	ok := true
	for i := range want {
		if i >= len(got) || want[i] != got[i] {
			a := "(missing)"
			if i < len(got) {
				a = got[i]
			}
			d.t.Errorf("%s:\n got  %.400s\n want %.400s", where, a, want[i])
			ok = false
		}
	}
	return ok
}

// sameOnReplica compares the replica with what the master's clients saw.
func (d *diffReplay) sameOnReplica(before []string) bool {
	waitSynced(d.t, d.rc, d.rrc)
	if !d.same("on the replica", before, d.observe(d.rrc)) {
		return false
	}
	if !sameData(d.t, d.s, d.replica, d.rc, d.rrc) {
		d.t.Errorf("the replica's keyspace is not byte-equal to the master's")
		return false
	}
	return true
}

// round runs n random steps, crashes, restarts and compares.
func (d *diffReplay) round(n int) bool {
	d.log = d.log[:0]
	for i := 0; i < n; i++ {
		d.step()
	}
	d.settle()
	before := d.observe(d.rc)
	ok := d.sameOnReplica(before)
	d.s.Close()
	d.start()
	if !d.same("after restart", before, d.observe(d.rc)) {
		ok = false
	}
	if !ok {
		tail := d.log
		if len(tail) > 200 {
			tail = tail[len(tail)-200:]
		}
		d.t.Logf("the round's last commands:\n%s", strings.Join(tail, "\n"))
	}
	return ok
}

func TestDifferentialReplay(t *testing.T) {
	budget := 3 * time.Second
	if v := os.Getenv("BLOOMKIT_REPLAY_TIME"); v != "" {
		var err error
		if budget, err = time.ParseDuration(v); err != nil {
			t.Fatalf("BLOOMKIT_REPLAY_TIME: %v", err)
		}
	} else if testing.Short() {
		budget = time.Second
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("BLOOMKIT_REPLAY_SEED"); v != "" {
		seed, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("seed %d (BLOOMKIT_REPLAY_SEED=%d repeats this run)", seed, seed)
	// Every BF.MERGE goes to the background, in chunks of 64 bytes, so
	// that the commands after it meet it running.
	chunk, async := keyspace.MergeChunk, keyspace.MergeAsyncBytes
	keyspace.MergeChunk, keyspace.MergeAsyncBytes = 64, 0
	keyspace.MergePause = func() { time.Sleep(100 * time.Microsecond) }
	defer func() { keyspace.MergeChunk, keyspace.MergeAsyncBytes, keyspace.MergePause = chunk, async, nil }()
	clock := newFakeClock(time.Unix(5_000_000, 0))
	d := &diffReplay{t: t, rng: rand.New(rand.NewSource(seed)), clock: clock,
		cfg: Config{AppendFsync: "always", MaxMemory: 512 << 10, Now: clock.Now, AutoSaveLogBytes: -1, Logger: quietLogger()}}
	d.start()
	deadline := time.Now().Add(budget)
	rounds := 0
	for rounds < 3 || time.Now().Before(deadline) {
		if !d.round(50 + d.rng.Intn(250)) {
			t.Fatalf("round %d differs (seed %d)", rounds, seed)
		}
		rounds++
	}
	t.Logf("%d rounds, each restarted and compared; %d background merges", rounds, d.merged)
}
