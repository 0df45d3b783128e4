package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/acl"
	"github.com/redis/go-redis/v9"
)

// asUser dials s and authenticates as user.
func asUser(t *testing.T, s *Server, user, pass string) *rawConn {
	t.Helper()
	rc := dialRaw(t, s.Addr())
	if got := rc.do("AUTH", user, pass); got != "+OK" {
		t.Fatalf("AUTH %s: %s", user, got)
	}
	return rc
}

func mustDo(t *testing.T, rc *rawConn, want string, args ...string) {
	t.Helper()
	if got := rc.do(args...); got != want {
		t.Fatalf("%v = %s, want %s", args, got, want)
	}
}

// TestACLEveryCommand runs every invocation of every command in the table
// (multiCases has one or more for each, and fails for a command without)
// as a user with +@read +@connection, through go-redis: a command runs iff
// it (or the subcommand named) is in @read or @connection, or needs no
// authentication; the others are refused with Redis's NOPERM text. New
// commands are covered as they join the table.
func TestACLEveryCommand(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, EnableDebugCommand: "yes"})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "reader", "on", ">pw", "~*", "&*", "+@read", "+@connection")
	ctx := context.Background()
	for _, cmd := range commandList {
		cases := multiCases[cmd.name]
		if len(cases) == 0 {
			t.Errorf("command %q has no invocation in multiCases", cmd.name)
		}
		for _, inv := range cases {
			bargs := make([][]byte, len(inv))
			anyArgs := make([]any, len(inv))
			for i, a := range inv {
				bargs[i], anyArgs[i] = []byte(a), a
			}
			ac := aclCommand(cmd, bargs)
			allowed := cmd.noauth || slices.Contains(ac.Categories, "read") || slices.Contains(ac.Categories, "connection")
			// One client per invocation: QUIT, RESET and HELLO change
			// the connection.
			c := redis.NewClient(&redis.Options{Addr: s.Addr(), Username: "reader", Password: "pw", PoolSize: 1, MaxRetries: -1})
			err := c.Do(ctx, anyArgs...).Err()
			c.Close()
			refused := err != nil && strings.HasPrefix(err.Error(), "NOPERM")
			if refused == allowed {
				t.Errorf("%v (%s, categories %v): allowed %v, got %v", inv, ac.Name, ac.Categories, allowed, err)
			}
			if refused {
				if want := "NOPERM User reader has no permissions to run the '" + ac.Name + "' command"; err.Error() != want {
					t.Errorf("%v: %q, want %q", inv, err, want)
				}
			}
		}
	}
	// FLUSHALL as the reader, and the keyspace is still there.
	admin.do("SET", "k", "v")
	r := asUser(t, s, "reader", "pw")
	mustDo(t, r, "-NOPERM User reader has no permissions to run the 'flushall' command", "FLUSHALL")
	mustDo(t, admin, ":1", "EXISTS", "k")
}

// TestACLReadOnlyFilters: the user of docs/operations.md who may read but
// not write filters, through redis-cli.
func TestACLReadOnlyFilters(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	s := startServer(t, Config{NoPersistence: true})
	host, port, _ := net.SplitHostPort(s.Addr())
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port, "--no-auth-warning"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimRight(string(out), "\n")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ACL", "SETUSER", "reader", "on", ">pw", "~*", "+@read", "+@connection"}, "OK"},
		{[]string{"BF.ADD", "seen", "a"}, "1"},
		{[]string{"--user", "reader", "--pass", "pw", "BF.EXISTS", "seen", "a"}, "1"},
		{[]string{"--user", "reader", "--pass", "pw", "BF.MEXISTS", "seen", "a", "b"}, "1\n0"},
		{[]string{"--user", "reader", "--pass", "pw", "BF.ADD", "seen", "b"}, "NOPERM User reader has no permissions to run the 'bf.add' command"},
		{[]string{"--user", "reader", "--pass", "pw", "BF.LOADCHUNK", "seen", "1", "x"}, "NOPERM User reader has no permissions to run the 'bf.loadchunk' command"},
		{[]string{"--user", "reader", "--pass", "pw", "CONFIG", "SET", "requirepass", "x"}, "NOPERM User reader has no permissions to run the 'config|set' command"},
		{[]string{"--user", "reader", "--pass", "pw", "ACL", "WHOAMI"}, "NOPERM User reader has no permissions to run the 'acl|whoami' command"},
		{[]string{"--user", "reader", "--pass", "wrong", "PING"}, "AUTH failed: WRONGPASS invalid username-password pair or user is disabled.\nPONG"}, // still the default user,
		{[]string{"ACL", "LIST"}, "user default on nopass sanitize-payload ~* &* +@all\nuser reader on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~* resetchannels -@all +@read +@connection"},
		{[]string{"ACL", "DRYRUN", "reader", "BF.ADD", "seen", "x"}, "User reader has no permissions to run the 'bf.add' command"},
		{[]string{"ACL", "DRYRUN", "reader", "BF.EXISTS", "seen", "x"}, "OK"},
	} {
		if got := run(c.args...); got != c.want {
			t.Errorf("redis-cli %v\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

// TestACLKeyPatterns: a user limited to a key prefix, multi-key commands
// included (every key is checked), and %R~/%W~ against the commands'
// read and write access.
func TestACLKeyPatterns(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "alice", "on", ">pw", "~user:*", "+@all")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "rw", "on", ">pw", "%R~r:*", "%W~w:*", "+@all")
	mustDo(t, admin, ":1", "BF.ADD", "other", "x")
	const noKey = "-NOPERM No permissions to access a key"
	a := asUser(t, s, "alice", "pw")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.ADD", "user:1", "x"}, ":1"},
		{[]string{"BF.ADD", "other", "x"}, noKey},
		{[]string{"BF.EXISTS", "other", "x"}, noKey},
		{[]string{"MSET", "user:a", "1", "user:b", "2"}, "+OK"},
		{[]string{"MSET", "user:a", "1", "other", "2"}, noKey},
		{[]string{"MGET", "user:a", "other"}, noKey},
		{[]string{"DEL", "user:a", "other"}, noKey},
		{[]string{"RENAME", "user:a", "other"}, noKey},
		{[]string{"RENAME", "other", "user:z"}, noKey},
		{[]string{"RENAME", "user:a", "user:c"}, "+OK"},
		{[]string{"BF.ADD", "user:2", "x"}, ":1"},
		{[]string{"BF.MERGE", "user:2", "user:1"}, "+OK"},
		{[]string{"BF.MERGE", "user:2", "other"}, noKey},
		{[]string{"BF.MERGE", "other", "user:1"}, noKey},
		{[]string{"DEL", "user:b", "user:c"}, ":2"},
		{[]string{"FLUSHALL"}, "+OK"}, // no key: the command rules decide
	} {
		if got := a.do(c.args...); got != c.want {
			t.Errorf("alice %v = %s, want %s", c.args, got, c.want)
		}
	}
	mustDo(t, admin, ":1", "BF.ADD", "r:f", "x")
	rw := asUser(t, s, "rw", "pw")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.EXISTS", "r:f", "x"}, ":1"},
		{[]string{"BF.ADD", "r:f", "y"}, noKey}, // a write
		{[]string{"BF.RESERVE", "w:f", "0.01", "100"}, "+OK"},
		{[]string{"BF.ADD", "w:f", "y"}, noKey},     // its reply reads the filter
		{[]string{"BF.EXISTS", "w:f", "y"}, noKey},  // a read
		{[]string{"BF.MERGE", "w:f", "r:f"}, "+OK"}, // writes w:f, reads r:f
		{[]string{"BF.MERGE", "r:f", "w:f"}, noKey},
		{[]string{"EXISTS", "r:f", "w:f"}, ":2"}, // touches no value: either pattern will do
		{[]string{"TYPE", "w:f"}, "+MBbloom--"},
		{[]string{"EXISTS", "other"}, noKey},
	} {
		if got := rw.do(c.args...); got != c.want {
			t.Errorf("rw %v = %s, want %s", c.args, got, c.want)
		}
	}
}

// TestACLUsersAndConnections: a disabled user cannot log in (its open
// connections keep working, as in Redis); deleting a user closes its
// connections; CLIENT LIST shows the user; CLIENT KILL USER.
func TestACLUsersAndConnections(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@all")
	bob := asUser(t, s, "bob", "pw")
	mustDo(t, bob, `"bob"`, "ACL", "WHOAMI")
	if got := admin.do("CLIENT", "LIST"); !strings.Contains(got, " user=bob ") || !strings.Contains(got, " user=default ") {
		t.Fatalf("CLIENT LIST: %s", got)
	}
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "bob", "off")
	mustDo(t, dialRaw(t, s.Addr()), "-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "bob", "pw")
	mustDo(t, bob, "+PONG", "PING")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "bob", "on")

	bob2 := asUser(t, s, "bob", "pw")
	mustDo(t, admin, ":1", "ACL", "DELUSER", "bob", "nobody")
	for _, c := range []*rawConn{bob, bob2} {
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := readReply(c.r); !errors.Is(err, io.EOF) {
			t.Fatalf("a deleted user's connection is still open: %v", err)
		}
	}
	mustDo(t, admin, "-ERR The 'default' user cannot be removed", "ACL", "DELUSER", "default")
	mustDo(t, admin, "-ERR No such user 'bob'", "CLIENT", "KILL", "USER", "bob")

	mustDo(t, admin, "+OK", "ACL", "SETUSER", "carol", "on", "nopass", "+@all")
	carol := asUser(t, s, "carol", "anything")
	mustDo(t, admin, ":1", "CLIENT", "KILL", "USER", "carol")
	carol.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := readReply(carol.r); !errors.Is(err, io.EOF) {
		t.Fatalf("CLIENT KILL USER left the connection open: %v", err)
	}
	// RESET makes the connection the default user again.
	c := asUser(t, s, "carol", "x")
	mustDo(t, c, "+RESET", "RESET")
	mustDo(t, c, `"default"`, "ACL", "WHOAMI")
}

// TestACLLog: refusals and failed logins in ACL LOG with Redis's fields;
// passwords never.
func TestACLLog(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, Logger: quietLogger()})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "eve", "on", ">pw", "~pub:*", "+get")
	e := asUser(t, s, "eve", "pw")
	e.do("SET", "pub:x", "1")
	e.do("SET", "pub:x", "1")
	e.do("GET", "secret")
	mustDo(t, dialRaw(t, s.Addr()), "-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "eve", "hunter2")
	c := newClient(t, s.Addr(), 3)
	entries, err := c.Do(context.Background(), "ACL", "LOG").Slice()
	if err != nil || len(entries) != 3 {
		t.Fatalf("ACL LOG: %v %v", entries, err)
	}
	want := []struct {
		reason, object, context string
		count                   int64
	}{{"auth", "AUTH", "toplevel", 1}, {"key", "secret", "toplevel", 1}, {"command", "set", "toplevel", 2}}
	for i, w := range want {
		m := entries[i].(map[any]any)
		if len(m) != 10 {
			t.Errorf("entry %d has %d fields: %v", i, len(m), m)
		}
		if m["reason"] != w.reason || m["object"] != w.object || m["context"] != w.context || m["count"] != w.count || m["username"] != "eve" {
			t.Errorf("entry %d = %v, want %+v", i, m, w)
		}
		if age, ok := m["age-seconds"].(float64); !ok || age < 0 || age > 60 {
			t.Errorf("entry %d age-seconds %v", i, m["age-seconds"])
		}
		for _, f := range []string{"client-info", "entry-id", "timestamp-created", "timestamp-last-updated"} {
			if _, ok := m[f]; !ok {
				t.Errorf("entry %d lacks %s", i, f)
			}
		}
		if ci, _ := m["client-info"].(string); !strings.Contains(ci, "user=") {
			t.Errorf("client-info %q", ci)
		}
		if strings.Contains(fmt.Sprint(m), "hunter2") {
			t.Errorf("a password in the log: %v", m)
		}
	}
	if got := admin.do("ACL", "LOG", "1"); strings.Count(got, "reason") != 1 {
		t.Errorf("ACL LOG 1: %s", got)
	}
	if info := admin.do("INFO", "stats"); !strings.Contains(info, `acl_access_denied_auth:1\r\nacl_access_denied_cmd:2\r\nacl_access_denied_key:1\r\nacl_access_denied_channel:0\r\n`) {
		t.Errorf("INFO stats: %s", info)
	}
	mustDo(t, admin, "+OK", "ACL", "LOG", "RESET")
	mustDo(t, admin, "[]", "ACL", "LOG")
	mustDo(t, admin, "+OK", "CONFIG", "SET", "acllog-max-len", "0")
	e.do("SET", "pub:x", "1")
	mustDo(t, admin, "[]", "ACL", "LOG")
}

// TestACLSlowlogRedacts: ACL SETUSER's rules (passwords) never reach the
// slow log, as in Redis.
func TestACLSlowlogRedacts(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, "+OK", "CONFIG", "SET", "slowlog-log-slower-than", "0")
	mustDo(t, rc, "+OK", "ACL", "SETUSER", "sl", "on", ">hunter2")
	if got := rc.do("SLOWLOG", "GET", "2"); strings.Contains(got, "hunter2") || !strings.Contains(got, `"ACL" "SETUSER" "(redacted)" "(redacted)" "(redacted)"`) {
		t.Fatalf("SLOWLOG: %s", got)
	}
}

// TestACLMulti: a refused command is refused when queued and EXEC aborts;
// rules changed after queueing are applied when EXEC runs the command.
func TestACLMulti(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "m", "on", ">pw", "~*", "+@all", "-flushall")
	c := asUser(t, s, "m", "pw")
	mustDo(t, c, "+OK", "MULTI")
	mustDo(t, c, "+QUEUED", "SET", "k", "v")
	mustDo(t, c, "-NOPERM User m has no permissions to run the 'flushall' command", "FLUSHALL")
	mustDo(t, c, "-EXECABORT Transaction discarded because of previous errors.", "EXEC")
	mustDo(t, admin, ":0", "EXISTS", "k")

	mustDo(t, c, "+OK", "MULTI")
	mustDo(t, c, "+QUEUED", "SET", "k", "v")
	mustDo(t, c, "+QUEUED", "SET", "k2", "v")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "m", "-set")
	mustDo(t, c, "[-NOPERM User m has no permissions to run the 'set' command -NOPERM User m has no permissions to run the 'set' command]", "EXEC")
	if got := admin.do("ACL", "LOG", "1"); !strings.Contains(got, `"context" "multi"`) {
		t.Errorf("ACL LOG of a refusal in MULTI: %s", got)
	}
}

// TestACLAuthAndRequirepass: requirepass is the default user's password,
// CONFIG SET requirepass changes it; AUTH and HELLO AUTH with users.
func TestACLAuthAndRequirepass(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, RequirePass: "topsecret"})
	c := dialRaw(t, s.Addr())
	mustDo(t, c, "-NOAUTH Authentication required.", "PING")
	mustDo(t, c, "+OK", "AUTH", "topsecret")
	mustDo(t, c, "+OK", "AUTH", "default", "topsecret")
	if got := c.do("ACL", "GETUSER", "default"); !strings.Contains(got, `"passwords" ["`+acl.HashPassword("topsecret")+`"]`) {
		t.Errorf("GETUSER default: %s", got)
	}
	mustDo(t, c, "+OK", "ACL", "SETUSER", "app", "on", ">apppw", "~*", "+@all")
	mustDo(t, c, "+OK", "CONFIG", "SET", "requirepass", "newpass")
	d := dialRaw(t, s.Addr())
	mustDo(t, d, "-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "topsecret")
	mustDo(t, d, "+OK", "AUTH", "newpass")
	mustDo(t, d, "+OK", "AUTH", "app", "apppw")
	mustDo(t, d, `"app"`, "ACL", "WHOAMI")

	// go-redis authenticates with HELLO 3 AUTH user pass.
	g := newClient(t, s.Addr(), 3, func(o *redis.Options) { o.Username, o.Password = "app", "apppw" })
	if who, err := g.Do(context.Background(), "ACL", "WHOAMI").Text(); err != nil || who != "app" {
		t.Fatalf("go-redis as app: %q %v", who, err)
	}
	bad := newClient(t, s.Addr(), 3, func(o *redis.Options) { o.Username, o.Password = "app", "nope" })
	if err := bad.Ping(context.Background()).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("go-redis with a wrong password: %v", err)
	}
	// No password: every connection is the default user at once.
	mustDo(t, c, "+OK", "CONFIG", "SET", "requirepass", "")
	e := dialRaw(t, s.Addr())
	mustDo(t, e, "+PONG", "PING")
	mustDo(t, e, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "AUTH", "x")
	// A default user that is off: nobody gets in without a user.
	mustDo(t, c, "+OK", "ACL", "SETUSER", "default", "off")
	mustDo(t, dialRaw(t, s.Addr()), "-NOAUTH Authentication required.", "PING")
}

// TestACLFile: users loaded from the aclfile at start, ACL SAVE writing it
// atomically, ACL LOAD, and the errors of a bad file with file:line.
func TestACLFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	os.WriteFile(file, []byte("user default on nopass ~* &* +@all\nuser ro on #"+strings.Repeat("ab", 32)+" ~* +@read\n"), 0o600)
	s := startServer(t, Config{NoPersistence: true, ACLFile: file})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, `["default" "ro"]`, "ACL", "USERS")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "new", "on", ">pw", "~app:*", "+@bloom")
	mustDo(t, admin, "+OK", "ACL", "SAVE")
	data, _ := os.ReadFile(file)
	want := "user default on nopass sanitize-payload ~* &* +@all\n" +
		"user new on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~app:* resetchannels -@all +@bloom\n" +
		"user ro on sanitize-payload #" + strings.Repeat("ab", 32) + " ~* resetchannels -@all +@read\n"
	if string(data) != want {
		t.Fatalf("ACL SAVE wrote\n%s\nwant\n%s", data, want)
	}
	if left, _ := filepath.Glob(file + ".tmp-*"); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	mustDo(t, admin, ":1", "ACL", "DELUSER", "new")
	mustDo(t, admin, "+OK", "ACL", "LOAD")
	mustDo(t, admin, `["default" "new" "ro"]`, "ACL", "USERS")

	// A bad file: ACL LOAD says where, and changes nothing.
	os.WriteFile(file, []byte("user default on nopass ~* +@all\nuser x on +nosuch\nnot a user line\n"), 0o600)
	got := admin.do("ACL", "LOAD")
	for _, w := range []string{file + ":2: Error in applying operation '+nosuch'", file + ":3 should start with user keyword", "no change to the previously active ACL rules was performed"} {
		if !strings.Contains(got, w) {
			t.Errorf("ACL LOAD: %s\nlacks %q", got, w)
		}
	}
	mustDo(t, admin, `["default" "new" "ro"]`, "ACL", "USERS")
	// ... and the server does not start with it.
	_, err := New(Config{NoPersistence: true, ACLFile: file, Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), file+":2") {
		t.Fatalf("New with a bad aclfile: %v", err)
	}
	// Without an aclfile, LOAD and SAVE say how to keep users instead.
	other := startServer(t, Config{NoPersistence: true})
	if got := dialRaw(t, other.Addr()).do("ACL", "SAVE"); got != "-"+errNoACLFile {
		t.Fatalf("ACL SAVE without aclfile: %s", got)
	}
}

// TestACLConfigFile: user directives in the config file, and CONFIG
// REWRITE writing the users back when there is no aclfile.
func TestACLConfigFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bloom.conf")
	os.WriteFile(conf, []byte("user default on nopass ~* &* +@all\nuser ops on >opspw ~* +@all -@dangerous\n"), 0o600)
	var cfg Config
	if err := ReadConfigFile(conf, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.NoPersistence, cfg.Addr = true, "127.0.0.1:0"
	s := startServer(t, cfg)
	admin := dialRaw(t, s.Addr())
	ops := asUser(t, s, "ops", "opspw")
	mustDo(t, ops, "-NOPERM User ops has no permissions to run the 'flushall' command", "FLUSHALL")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "late", "on", ">pw", "+ping")
	mustDo(t, admin, "+OK", "CONFIG", "REWRITE")
	data, _ := os.ReadFile(conf)
	if !strings.Contains(string(data), "\nuser late on sanitize-payload #") || strings.Count(string(data), "user ops ") != 1 {
		t.Fatalf("CONFIG REWRITE wrote:\n%s", data)
	}
	// The rewritten file starts a server with the same users.
	var cfg2 Config
	if err := ReadConfigFile(conf, &cfg2); err != nil {
		t.Fatal(err)
	}
	cfg2.NoPersistence, cfg2.Addr = true, "127.0.0.1:0"
	s2 := startServer(t, cfg2)
	asUser(t, s2, "late", "pw")

	// Errors name the file and line; users and an aclfile together are refused.
	os.WriteFile(conf, []byte("\n\nuser bad on +nosuch\n"), 0o600)
	var cfg3 Config
	if err := ReadConfigFile(conf, &cfg3); err != nil {
		t.Fatal(err)
	}
	cfg3.NoPersistence, cfg3.Logger = true, quietLogger()
	if _, err := New(cfg3); err == nil || !strings.Contains(err.Error(), conf+":3") || !strings.Contains(err.Error(), "Unknown command") {
		t.Fatalf("bad user directive: %v", err)
	}
	cfg3.Users[0].Rules = []string{"on"}
	cfg3.ACLFile = filepath.Join(dir, "x.acl")
	if _, err := New(cfg3); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("users and aclfile: %v", err)
	}
}

// TestACLRedisBloom is RedisBloom's tests/flow/test_acl.py against bloom
// serve: ACL CAT shows bloom and cuckoo, their commands are listed in
// them (bloomkit's BF.MERGE and BF.ADVANCE are filter commands too), and
// a user without the permission is refused.
func TestACLRedisBloom(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	c := newClient(t, s.Addr(), 2)
	cats, err := c.Do(ctx, "ACL", "CAT").StringSlice()
	if err != nil || !slices.Contains(cats, "bloom") || !slices.Contains(cats, "cuckoo") {
		t.Fatalf("ACL CAT: %v %v", cats, err)
	}
	set := func(cat string) []string {
		l, err := c.Do(ctx, "ACL", "CAT", cat).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(l)
		return l
	}
	bloomWant := strings.Fields("bf.add bf.advance bf.card bf.debug bf.exists bf.info bf.insert bf.loadchunk bf.madd bf.merge bf.mexists bf.reserve bf.scandump")
	if got := set("bloom"); !slices.Equal(got, bloomWant) {
		t.Errorf("ACL CAT bloom = %v, want %v", got, bloomWant)
	}
	cuckooWant := strings.Fields("cf.add cf.addnx cf.compact cf.count cf.debug cf.del cf.exists cf.info cf.insert cf.insertnx cf.loadchunk cf.mexists cf.reserve cf.scandump")
	if got := set("cuckoo"); !slices.Equal(got, cuckooWant) {
		t.Errorf("ACL CAT cuckoo = %v, want %v", got, cuckooWant)
	}
	if !slices.Contains(set("read"), "bf.exists") {
		t.Error("bf.exists not in @read")
	}
	if _, err := c.Do(ctx, "ACL", "CAT", "nosuch").Result(); err == nil || err.Error() != "ERR Unknown category 'nosuch'" {
		t.Errorf("unknown category: %v", err)
	}

	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, "+OK", "FLUSHALL")
	mustDo(t, rc, "+OK", "ACL", "SETUSER", "testusr", "on", ">123", "~*", "&*")
	mustDo(t, rc, "+OK", "AUTH", "testusr", "123")
	mustDo(t, rc, "-NOPERM User testusr has no permissions to run the 'bf.exists' command", "bf.exists", "a", "a")
	mustDo(t, rc, "+OK", "AUTH", "default", "")
	mustDo(t, rc, "+OK", "ACL", "SETUSER", "testusr", "+@read")
	mustDo(t, rc, "+OK", "AUTH", "testusr", "123")
	for _, cmd := range []string{"bf.exists", "bf.mexists", "bf.info", "bf.card", "bf.debug", "bf.scandump"} {
		if got := rc.do(cmd); strings.Contains(got, "has no permissions") {
			t.Errorf("%s as a reader: %s", cmd, got)
		}
	}
	mustDo(t, rc, "-NOPERM User testusr has no permissions to run the 'bf.reserve' command", "bf.reserve", "bf", "0.01", "1000")
	mustDo(t, rc, "+OK", "AUTH", "default", "")
	mustDo(t, rc, "+OK", "ACL", "SETUSER", "testusr", "+@write")
	mustDo(t, rc, "+OK", "AUTH", "testusr", "123")
	for _, cmd := range []string{"bf.reserve", "bf.add", "bf.madd", "bf.insert", "bf.loadchunk"} {
		if got := rc.do(cmd); strings.Contains(got, "has no permissions") {
			t.Errorf("%s as a writer: %s", cmd, got)
		}
	}
	mustDo(t, rc, "+OK", "AUTH", "default", "")
	mustDo(t, rc, "+OK", "ACL", "SETUSER", "testusr2", "on", ">123", "~*", "&*")
	mustDo(t, rc, "+OK", "ACL", "SETUSER", "testusr2", "+@bloom")
	mustDo(t, rc, "+OK", "AUTH", "testusr2", "123")
	mustDo(t, rc, ":1", "bf.add", "test", "foo")
	mustDo(t, rc, ":1", "bf.exists", "test", "foo")
	mustDo(t, rc, ":0", "bf.exists", "test", "bar")
	mustDo(t, rc, "-NOPERM User testusr2 has no permissions to run the 'cf.reserve' command", "cf.reserve", "cf", "1000")
}

// acl-pubsub-default, as Redis 7: new users, and "reset", get no channels
// (resetchannels, the default) or every channel (allchannels); a Redis
// config file that sets it starts the server.
func TestACLPubsubDefault(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	admin := dialRaw(t, s.Addr())
	mustDo(t, admin, `["acl-pubsub-default" "resetchannels"]`, "CONFIG", "GET", "acl-pubsub-default")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "before", "on", ">pw", "+@all", "~*")
	mustDo(t, asUser(t, s, "before", "pw"), "-NOPERM No permissions to access a channel", "PUBLISH", "news", "x")

	mustDo(t, admin, "-ERR CONFIG SET failed (possibly related to argument 'acl-pubsub-default') - argument(s) must be one of the following: allchannels, resetchannels",
		"CONFIG", "SET", "acl-pubsub-default", "some")
	mustDo(t, admin, "+OK", "CONFIG", "SET", "acl-pubsub-default", "AllChannels")
	mustDo(t, admin, `["acl-pubsub-default" "allchannels"]`, "CONFIG", "GET", "acl-pubsub-default")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "after", "on", ">pw", "+@all", "~*")
	mustDo(t, asUser(t, s, "after", "pw"), ":0", "PUBLISH", "news", "x")
	// A user made before keeps its channels until reset.
	mustDo(t, asUser(t, s, "before", "pw"), "-NOPERM No permissions to access a channel", "PUBLISH", "news", "x")
	mustDo(t, admin, "+OK", "ACL", "SETUSER", "before", "reset", "on", ">pw", "+@all")
	mustDo(t, asUser(t, s, "before", "pw"), ":0", "PUBLISH", "news", "x")

	// From a config file, whatever the order of the lines.
	dir := t.TempDir()
	conf := filepath.Join(dir, "redis.conf")
	os.WriteFile(conf, []byte("user feed on >pw +@all ~*\nacl-pubsub-default allchannels\n"), 0o600)
	var cfg Config
	if err := ReadConfigFile(conf, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.NoPersistence, cfg.Addr = true, "127.0.0.1:0"
	s2 := startServer(t, cfg)
	mustDo(t, asUser(t, s2, "feed", "pw"), ":0", "PUBLISH", "news", "x")
	os.WriteFile(conf, []byte("acl-pubsub-default sometimes\n"), 0o600)
	if err := ReadConfigFile(conf, &Config{}); err == nil || !strings.Contains(err.Error(), "allchannels, resetchannels") {
		t.Fatalf("bad acl-pubsub-default: %v", err)
	}
}
