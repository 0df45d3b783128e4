package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/redis/go-redis/v9"
)

// A master's stream is input like any client's: a command with missing
// arguments (sent by a broken or foreign master) is refused with the
// arity error on the replica, logged, and skipped; the replica neither
// crashes nor stops following, and what comes after it applies.
func TestReplicaRefusesShortCommandsFromMaster(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	r := startReplica(t, m, Config{})
	rc := dialRaw(t, r.Addr())
	mc.do("SET", "k", "v")
	waitSynced(t, mc, rc)
	short := [][]string{
		{"SET"}, {"SET", "k"}, {"EXPIRE", "k"}, {"RENAME", "k"}, {"GETDEL"}, {"PERSIST"},
		{"PEXPIREAT", "k"}, {"DEL"}, {"MSET", "k"}, {"BF.ADD", "k"}, {"CF.ADD"}, {"BF.MADD"},
		{"BF.RESERVE", "x"}, {"FLUSHALL", "a", "b"}, {"BF.INSERT", "x", "ITEMS"},
	}
	for _, args := range short {
		cmd := make([][]byte, len(args))
		for i, a := range args {
			cmd[i] = []byte(a)
		}
		// As the master's stream carries it: through the feed.
		m.db.Lock()
		m.feed([][][]byte{cmd}, false)
		m.db.Unlock()
	}
	// And inside a transaction of the stream.
	m.db.Lock()
	m.feed([][][]byte{{[]byte("EXPIRE"), []byte("k")}, {[]byte("SET"), []byte("t"), []byte("1")}}, true)
	m.db.Unlock()
	mc.do("SET", "after", "1")
	waitSynced(t, mc, rc)
	if got := rc.do("GET", "after"); got != `"1"` {
		t.Fatalf("replica after short commands: GET after = %s", got)
	}
	if got := rc.do("GET", "t"); got != `"1"` {
		t.Fatalf("replica: the transaction's valid command was not applied: GET t = %s", got)
	}
	if got := rc.do("GET", "k"); got != `"v"` {
		t.Fatalf("replica: GET k = %s, want the value the short commands left alone", got)
	}
	if got := replInfo(t, rc, "replication", "master_link_status"); got != "up" {
		t.Fatalf("master_link_status = %s", got)
	}
}

// Every write that is logged is a change: BF.ADD, BF.MADD, BF.INSERT,
// CF.ADD, CF.INSERT into an existing filter move
// rdb_changes_since_last_save, so that with appendonly no the save points
// write them (Redis + RedisBloom counts them: RedisBloom replicates every
// such command), and a write that fails does not.
func TestFilterWritesCountAsChanges(t *testing.T) {
	s := startServer(t, Config{NoAppendLog: true})
	rc := dialRaw(t, s.Addr())
	changes := func() int {
		n, err := strconv.Atoi(replInfo(t, rc, "persistence", "rdb_changes_since_last_save"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	rc.do("BF.RESERVE", "bf", "0.01", "1000")
	rc.do("CF.RESERVE", "cf", "1000")
	if got := rc.do("SAVE"); got != "+OK" {
		t.Fatalf("SAVE: %s", got)
	}
	for _, args := range [][]string{
		{"BF.ADD", "bf", "a"},
		{"BF.MADD", "bf", "b", "c"},
		{"BF.INSERT", "bf", "ITEMS", "d"},
		{"CF.ADD", "cf", "a"},
		{"CF.ADDNX", "cf", "b"},
		{"CF.INSERT", "cf", "ITEMS", "c"},
		{"CF.DEL", "cf", "c"},
	} {
		before := changes()
		if got := rc.do(args...); strings.HasPrefix(got, "-") {
			t.Fatalf("%v: %s", args, got)
		}
		if after := changes(); after <= before {
			t.Errorf("%s into an existing filter: rdb_changes_since_last_save %d -> %d, want more", args[0], before, after)
		}
	}
	// A write that fails changes nothing, and counts nothing.
	rc.do("SET", "str", "v")
	before := changes()
	if got := rc.do("BF.ADD", "str", "a"); !strings.HasPrefix(got, "-WRONGTYPE") {
		t.Fatalf("BF.ADD on a string = %s", got)
	}
	if after := changes(); after != before {
		t.Errorf("a failed BF.ADD: rdb_changes_since_last_save %d -> %d, want no change", before, after)
	}
}

// The save point that counts filter writes fires: with appendonly no and
// a save point of one change, a BF.ADD into an existing filter is in the
// next snapshot, and survives a crash.
func TestSavePointSeesFilterWrites(t *testing.T) {
	s := startServer(t, Config{NoAppendLog: true})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.RESERVE", "bf", "0.01", "1000")
	rc.do("SAVE")
	rc.do("BF.ADD", "bf", "x")
	s.persist.lastSave.Store(s.persist.lastSave.Load() - 3601) // the 3600 s, 1 change point
	if !s.savePointDue() {
		t.Fatal("a save point of 1 change is not due after BF.ADD into an existing filter")
	}
}

// A command that returns what a key held needs read access to it: a
// write-only user may SET a key but not read it back with SET ... GET
// (Redis: the key is RW ACCESS when GET is given, OW otherwise).
func TestSetGetNeedsReadAccess(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "w", "on", ">pw", "%W~*", "+@all")
	mustDo(t, admin, "+OK", "SET", "secret", "s3cret")
	w := asUser(t, s, "w", "pw")
	mustDo(t, w, "+OK", "SET", "k", "v")
	mustDo(t, w, "-NOPERM No permissions to access a key", "SET", "secret", "x", "GET")
	mustDo(t, w, "-NOPERM No permissions to access a key", "SET", "secret", "x", "EX", "100", "get")
	mustDo(t, w, "-NOPERM No permissions to access a key", "GETDEL", "secret")
	mustDo(t, admin, `"s3cret"`, "GET", "secret")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "rw", "on", ">pw", "~*", "+@all")
	rw := asUser(t, s, "rw", "pw")
	mustDo(t, rw, `"s3cret"`, "SET", "secret", "x", "GET")
}

// MEMORY USAGE names a key: a user limited to app:* keys learns nothing
// of the others (whether they exist, how big they are).
func TestMemoryUsageNamesItsKey(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+@all")
	mustDo(t, admin, "+OK", "SET", "other:secret", "v")
	mustDo(t, admin, "+OK", "SET", "app:mine", "v")
	u := asUser(t, s, "app", "pw")
	mustDo(t, u, "-NOPERM No permissions to access a key", "MEMORY", "USAGE", "other:secret")
	mustDo(t, u, "-NOPERM No permissions to access a key", "MEMORY", "USAGE", "other:missing", "SAMPLES", "0")
	if got := u.do("MEMORY", "USAGE", "app:mine"); !strings.HasPrefix(got, ":") {
		t.Fatalf("MEMORY USAGE of an allowed key = %s", got)
	}
	// ACL DRYRUN says the same.
	mustDo(t, admin, `"User app has no permissions to access the 'other:secret' key"`, "ACL", "DRYRUN", "app", "MEMORY", "USAGE", "other:secret")
}

// ACL SETUSER that takes channels away from a user disconnects its
// subscribers whose subscriptions are no longer allowed, as Redis 7 does;
// those whose subscriptions are still allowed stay.
func TestRevokedChannelsDisconnectSubscribers(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "sub", "on", ">pw", "~*", "&news", "&other:*", "+@all")
	news := asUser(t, s, "sub", "pw")
	mustDo(t, news, `["subscribe" "news" :1]`, "SUBSCRIBE", "news")
	other := asUser(t, s, "sub", "pw")
	mustDo(t, other, `["subscribe" "other:1" :1]`, "SUBSCRIBE", "other:1")
	pat := asUser(t, s, "sub", "pw")
	mustDo(t, pat, `["psubscribe" "other:*" :1]`, "PSUBSCRIBE", "other:*")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "sub", "resetchannels", "&other:*")
	// The news subscriber is gone: its connection is closed.
	news.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := readReply(news.r); err == nil {
		t.Fatal("the subscriber of a channel no longer allowed still receives")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the subscriber of a channel no longer allowed was not disconnected")
	}
	// The others still receive.
	mustDo(t, admin, ":2", "PUBLISH", "other:1", "hello")
	if got := other.read(); got != `["message" "other:1" "hello"]` {
		t.Fatalf("subscriber still allowed: %s", got)
	}
	if got := pat.read(); got != `["pmessage" "other:*" "other:1" "hello"]` {
		t.Fatalf("pattern subscriber still allowed: %s", got)
	}
	mustDo(t, admin, ":0", "PUBLISH", "news", "x")
}

// Every command both servers have names the same key positions in
// COMMAND INFO as Redis 7 (first, last, step), and COMMAND GETKEYS on
// Redis finds no key where ours names none: a command that takes keys
// but names none escapes the ACL key patterns (WATCH did, MEMORY USAGE
// did).
func TestKeyPositionsMatchRedis(t *testing.T) {
	rs := redistest.Start(t)
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	ours := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer ours.Close()
	theirs := rs.Client(t)
	keys := func(c *redis.Client, name string) ([3]int64, bool) {
		v, err := c.Do(ctx, "COMMAND", "INFO", name).Slice()
		if err != nil || len(v) != 1 || v[0] == nil {
			return [3]int64{}, false
		}
		info := v[0].([]any)
		return [3]int64{info[3].(int64), info[4].(int64), info[5].(int64)}, true
	}
	compared := 0
	for _, cmd := range commandList {
		want, ok := keys(theirs, cmd.name)
		if !ok {
			continue // not a Redis command (BF.*, CF.*)
		}
		got, _ := keys(ours, cmd.name)
		compared++
		if got != want {
			t.Errorf("COMMAND INFO %s: key positions %v, Redis 7 says %v", cmd.name, got, want)
		}
	}
	if compared < 40 {
		t.Fatalf("compared only %d commands with Redis", compared)
	}
	// The keys of requests whose positions depend on their arguments.
	for _, args := range [][]string{{"MEMORY", "USAGE", "k"}, {"SET", "k", "v", "GET"}, {"WATCH", "a", "b"}} {
		bargs := make([][]byte, len(args))
		rargs := make([]any, len(args)+2)
		rargs[0], rargs[1] = "COMMAND", "GETKEYS"
		for i, a := range args {
			bargs[i], rargs[i+2] = []byte(a), a
		}
		want, err := theirs.Do(ctx, rargs...).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		cmd, _ := lookupCommand(bargs[0])
		var got []string
		forKeys(cmd, bargs, func(k []byte) { got = append(got, string(k)) })
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%v: keys %v, Redis 7 finds %v", args, got, want)
		}
	}
}

// A logged command with missing arguments (a log written by hand, or by
// a broken tool) stops start-up with the arity error, file and offset,
// as any record that fails on replay does: never a panic.
func TestReplayShortCommandStopsStartup(t *testing.T) {
	for _, args := range [][]string{{"SET", "k"}, {"EXPIRE", "k"}, {"RENAME", "k"}, {"PEXPIREAT", "k"}, {"GETDEL"}, {"PERSIST"}, {"MSET", "k"}} {
		s := startServer(t, Config{AppendFsync: "always"})
		rc := dialRaw(t, s.Addr())
		rc.do("SET", "k", "v")
		s.Close()
		path := filepath.Join(s.cfg.Dir, LogName(1))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		cmd := make([][]byte, len(args))
		for i, a := range args {
			cmd[i] = []byte(a)
		}
		f.Write(aof.EncodeRecord(nil, cmd))
		f.Close()
		_, err = New(Config{Dir: s.cfg.Dir, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "wrong number of arguments") {
			t.Fatalf("%v logged: New = %v", args, err)
		}
	}
}

// save is Redis's: the config file's lines (the first replaces the
// defaults, the next add, save "" clears), CONFIG GET and CONFIG SET; the
// points in force decide when a snapshot is due with appendonly no.
func TestSavePoints(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ file, want string }{
		{"", "3600 1 300 100 60 10000"},
		{"save 900 1\nsave 300 10\n", "900 1 300 10"},
		{"save \"900 1 60 5\"\n", "900 1 60 5"},
		{"save 900 1\nsave \"\"\n", ""},
		{"save \"\"\nsave 5 1\n", "5 1"},
	} {
		conf := filepath.Join(dir, "x.conf")
		if err := os.WriteFile(conf, []byte(c.file), 0o644); err != nil {
			t.Fatal(err)
		}
		var cfg Config
		if err := ReadConfigFile(conf, &cfg); err != nil {
			t.Fatalf("%q: %v", c.file, err)
		}
		cfg.NoPersistence, cfg.Addr = true, "127.0.0.1:0"
		s := startServer(t, cfg)
		rc := dialRaw(t, s.Addr())
		mustDo(t, rc, `["save" "`+c.want+`"]`, "CONFIG", "GET", "save")
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.conf"), []byte("save 900\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReadConfigFile(filepath.Join(dir, "bad.conf"), &Config{}); err == nil || !strings.Contains(err.Error(), "Invalid save parameters") {
		t.Fatalf("save 900: %v", err)
	}

	s := startServer(t, Config{NoAppendLog: true})
	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, "-ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters", "CONFIG", "SET", "save", "0 1")
	mustDo(t, rc, "+OK", "CONFIG", "SET", "save", "10 2")
	rc.do("SAVE")
	rc.do("SET", "a", "1")
	s.persist.lastSave.Store(s.persist.lastSave.Load() - 11)
	if s.savePointDue() {
		t.Fatal("save 10 2: due after one change")
	}
	rc.do("SET", "b", "1")
	if !s.savePointDue() {
		t.Fatal("save 10 2: not due after two changes 11 s old")
	}
	mustDo(t, rc, "+OK", "CONFIG", "SET", "save", "")
	if s.savePointDue() {
		t.Fatal(`save "": a snapshot is still due`)
	}
}

// rename-command as Redis: the old name is unknown, the new one runs the
// command, "" turns it off; what is logged names the command by its own
// name, so the log replays (and a replica applies it) whatever the
// renames.
func TestRenameCommand(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "r.conf")
	if err := os.WriteFile(conf, []byte("rename-command FLUSHALL \"\"\nrename-command SET my-set\nrename-command CONFIG \"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	if err := ReadConfigFile(conf, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Addr, cfg.Dir, cfg.AppendFsync = "127.0.0.1:0", filepath.Join(dir, "data"), "always"
	s := startServer(t, cfg)
	rc := dialRaw(t, s.Addr())
	if got := rc.do("FLUSHALL"); !strings.HasPrefix(got, "-ERR unknown command 'FLUSHALL'") {
		t.Fatalf("FLUSHALL renamed to \"\": %s", got)
	}
	if got := rc.do("SET", "k", "v"); !strings.HasPrefix(got, "-ERR unknown command 'SET'") {
		t.Fatalf("SET renamed: %s", got)
	}
	mustDo(t, rc, "+OK", "MY-SET", "k", "v")
	mustDo(t, rc, "+OK", "MULTI")
	mustDo(t, rc, "+QUEUED", "my-set", "t", "1")
	mustDo(t, rc, "[+OK]", "EXEC")
	s.Close()
	// The log names SET: a server without the renames replays it.
	s2 := startServer(t, Config{Dir: cfg.Dir})
	rc2 := dialRaw(t, s2.Addr())
	mustDo(t, rc2, `"v"`, "GET", "k")
	mustDo(t, rc2, `"1"`, "GET", "t")

	for _, bad := range []string{"rename-command NOSUCH x\n", "rename-command SET get\n"} {
		if err := os.WriteFile(conf, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		var c Config
		if err := ReadConfigFile(conf, &c); err != nil {
			t.Fatal(err)
		}
		c.NoPersistence = true
		if _, err := New(c); err == nil {
			t.Errorf("%q: New accepted it", bad)
		}
	}
}
