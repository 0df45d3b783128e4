package server

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
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
