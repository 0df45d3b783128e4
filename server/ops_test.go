package server

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The operator surface, through real clients over TCP: CONFIG, SLOWLOG,
// INFO, CLIENT, RESET, /metrics auth.

func TestConfigGetSet(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	got := rc.do("CONFIG", "GET", "*")
	for _, name := range []string{"appendfsync", "maxmemory", "requirepass", "timeout", "maxclients",
		"slowlog-log-slower-than", "slowlog-max-len", "save", "appendonly", "databases", "port", "bind",
		"dir", "proto-max-bulk-len", "client-query-buffer-limit"} {
		if !strings.Contains(got, strconv.Quote(name)) {
			t.Errorf("CONFIG GET * lacks %s: %s", name, got)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"CONFIG", "GET", "maxclients"}, `["maxclients" "10000"]`},
		{[]string{"CONFIG", "SET", "maxclients", "50"}, "+OK"},
		{[]string{"CONFIG", "GET", "maxclients"}, `["maxclients" "50"]`},
		{[]string{"CONFIG", "SET", "port", "70000"}, "-ERR CONFIG SET failed (possibly related to argument 'port') - argument must be between 0 and 65535 inclusive"},
		{[]string{"CONFIG", "SET", "bind", "0.0.0.0"}, "-ERR CONFIG SET failed (possibly related to argument 'bind') - can't set immutable config"},
		{[]string{"CONFIG", "SET", "databases", "16"}, "-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"},
		{[]string{"CONFIG", "SET", "nosuch", "1"}, "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"},
		{[]string{"CONFIG", "SET", "timeout", "x"}, "-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"},
		{[]string{"CONFIG", "SET", "maxclients", "0"}, "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 2147483647 inclusive"},
		{[]string{"CONFIG", "SET", "appendfsync", "sometimes"}, "-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: always, everysec, no"},
		{[]string{"CONFIG", "SET", "maxmemory", "lots"}, "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"},
		{[]string{"CONFIG", "SET", "timeout"}, "-ERR wrong number of arguments for 'config|set' command"},
		{[]string{"CONFIG", "SET", "timeout", "1", "maxclients"}, "-ERR syntax error"},
		// All or nothing: the second pair fails, the first is undone.
		{[]string{"CONFIG", "SET", "slowlog-max-len", "7", "timeout", "-1"}, "-ERR CONFIG SET failed (possibly related to argument 'timeout') - argument must be between 0 and 2147483647 inclusive"},
		{[]string{"CONFIG", "GET", "slowlog-max-len"}, `["slowlog-max-len" "128"]`},
		{[]string{"CONFIG", "SET", "slowlog-max-len", "7", "slowlog-max-len", "8"}, "-ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - duplicate parameter"},
		{[]string{"CONFIG", "SET", "maxmemory", "2mb"}, "+OK"},
		{[]string{"CONFIG", "GET", "maxmemory"}, `["maxmemory" "2097152"]`},
		{[]string{"BF.RESERVE", "big", "0.001", "10000000"}, "-ERR Insufficient memory to create filter"},
		{[]string{"CONFIG", "SET", "maxmemory", "1gb"}, "+OK"},
		{[]string{"BF.RESERVE", "big", "0.001", "10000000"}, "+OK"},
		{[]string{"CONFIG", "SET", "appendfsync", "always"}, "+OK"},
		{[]string{"CONFIG", "GET", "appendfsync"}, `["appendfsync" "always"]`},
		{[]string{"CONFIG", "REWRITE"}, "-ERR The server is running without a config file"},
		{[]string{"CONFIG", "NOPE"}, "-ERR unknown subcommand 'NOPE'. Try CONFIG HELP."},
		// CONFIG runs inside MULTI, as in Redis (Sentinel queues CONFIG
		// REWRITE with SLAVEOF): EXEC holds the keyspace lock, which
		// CONFIG SET maxmemory and RESETSTAT need, without a deadlock.
		{[]string{"MULTI"}, "+OK"},
		{[]string{"CONFIG", "SET", "maxmemory", "2gb"}, "+QUEUED"},
		{[]string{"CONFIG", "GET", "maxmemory"}, "+QUEUED"},
		{[]string{"CONFIG", "RESETSTAT"}, "+QUEUED"},
		{[]string{"CONFIG", "REWRITE"}, "+QUEUED"},
		{[]string{"EXEC"}, `[+OK ["maxmemory" "2147483648"] +OK -ERR The server is running without a config file]`},
	} {
		if got := rc.do(c.args...); got != c.want {
			t.Errorf("%v: got %s, want %s", c.args, got, c.want)
		}
	}
}

// With persistence, appendfsync changes reach the log and INFO.
func TestConfigSetAppendFsync(t *testing.T) {
	s := startServer(t, Config{})
	rc := dialRaw(t, s.Addr())
	for _, mode := range []string{"always", "no", "everysec", "always", "everysec"} {
		if got := rc.do("CONFIG", "SET", "appendfsync", mode); got != "+OK" {
			t.Fatal(got)
		}
		if got := rc.do("BF.ADD", "k", mode); got != ":1" && got != ":0" {
			t.Fatal(got)
		}
		if got := rc.do("INFO", "persistence"); !strings.Contains(got, "aof_fsync:"+mode) {
			t.Fatalf("INFO persistence after appendfsync %s: %s", mode, got)
		}
		if got := s.aof.Policy().String(); got != mode {
			t.Fatalf("appendfsync %s: the log's policy is %s", mode, got)
		}
	}
	// Released by an fsync of their own, off the keyspace lock.
	waitFor(t, func() bool { return s.aof.Unsynced() == 0 })
}

// CONFIG SET requirepass rotates the password: clients authenticated stay,
// new ones need the new password.
func TestRequirePassRotation(t *testing.T) { bothPaths(t, testRequirePassRotation) }

func testRequirePassRotation(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, RequirePass: "old", goroutinePerConn: gpc})
	admin := dialRaw(t, s.Addr())
	if got := admin.do("AUTH", "old"); got != "+OK" {
		t.Fatal(got)
	}
	if got := admin.do("CONFIG", "SET", "requirepass", "new"); got != "+OK" {
		t.Fatal(got)
	}
	if got := admin.do("PING"); got != "+PONG" {
		t.Fatalf("an authenticated client after rotation: %s", got)
	}
	c2 := dialRaw(t, s.Addr())
	if got := c2.do("PING"); got != "-NOAUTH Authentication required." {
		t.Fatal(got)
	}
	if got := c2.do("AUTH", "old"); !strings.HasPrefix(got, "-WRONGPASS") {
		t.Fatalf("the old password still works: %s", got)
	}
	if got := c2.do("AUTH", "new"); got != "+OK" {
		t.Fatal(got)
	}
	if got := admin.do("CONFIG", "GET", "requirepass"); got != `["requirepass" "new"]` {
		t.Fatal(got)
	}
	if got := admin.do("CONFIG", "SET", "requirepass", ""); got != "+OK" {
		t.Fatal(got)
	}
	if got := dialRaw(t, s.Addr()).do("PING"); got != "+PONG" {
		t.Fatalf("no password, a new client: %s", got)
	}
	// The slow log never shows a password.
	admin.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	admin.do("AUTH", "whatever")
	admin.do("CONFIG", "SET", "requirepass", "secret3")
	if got := admin.do("SLOWLOG", "GET", "-1"); strings.Contains(got, "secret3") || strings.Contains(got, "whatever") ||
		!strings.Contains(got, `"(redacted)"`) {
		t.Fatalf("SLOWLOG shows a password: %s", got)
	}
}

func TestConfigSetTimeoutAndMaxclients(t *testing.T) { bothPaths(t, testConfigSetTimeoutAndMaxclients) }

func testConfigSetTimeoutAndMaxclients(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: gpc})
	admin := dialRaw(t, s.Addr())
	if got := admin.do("CONFIG", "SET", "maxclients", "2"); got != "+OK" {
		t.Fatal(got)
	}
	second := dialRaw(t, s.Addr())
	if got := second.do("PING"); got != "+PONG" {
		t.Fatal(got)
	}
	third := dialRaw(t, s.Addr())
	if got := third.read(); got != "-ERR max number of clients reached" {
		t.Fatalf("a third client with maxclients 2: %s", got)
	}
	if got := admin.do("CONFIG", "SET", "maxclients", "100", "timeout", "1"); got != "+OK" {
		t.Fatal(got)
	}
	if got := second.do("PING"); got != "+PONG" {
		t.Fatal(got)
	}
	start := time.Now()
	expectClosed(t, second)
	if d := time.Since(start); d < 800*time.Millisecond {
		t.Errorf("idle client closed after %v with timeout 1", d)
	}
}

func TestConfigRewrite(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bloomkit.conf")
	if err := os.WriteFile(file, []byte("# mine\nmaxclients 10\nmaxclients 11\nport 7000\nmaxmemory 2gb\ntimeout 5m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Config{NoPersistence: true, ConfigFile: file, MaxMemory: 2 << 30, Timeout: 5 * time.Minute})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("CONFIG", "SET", "maxclients", "77", "requirepass", "a b", "slowlog-max-len", "64"); got != "+OK" {
		t.Fatal(got)
	}
	if got := rc.do("CONFIG", "REWRITE"); got != "+OK" {
		t.Fatal(got)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	// The user's units stay; only what CONFIG SET changed is added (as
	// it was written), no defaults.
	for _, want := range []string{"# mine\nmaxclients 77\nport 7000\nmaxmemory 2gb\ntimeout 5m\n", "requirepass \"a b\"\n", "slowlog-max-len 64\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"appendfsync", "slowlog-log-slower-than", `requirepass ""`, "maxmemory 2147483648", "protected-mode"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("rewritten file has %q, which CONFIG SET did not change:\n%s", unwanted, text)
		}
	}
	if strings.Count(text, "maxclients") != 1 {
		t.Errorf("maxclients more than once:\n%s", text)
	}
	// The file reads back to the same settings.
	cfg := Config{}
	if err := ReadConfigFile(file, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxClients != 77 || cfg.RequirePass != "a b" || cfg.MaxMemory != 2<<30 || cfg.Timeout != 5*time.Minute || *cfg.SlowlogMaxLen != 64 {
		t.Errorf("read back: %+v", cfg)
	}
}

func TestSlowlog(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	rc := dialRaw(t, s.Addr())
	rc.do("CLIENT", "SETNAME", "tester")
	if got := rc.do("CONFIG", "SET", "slowlog-log-slower-than", "0"); got != "+OK" {
		t.Fatal(got)
	}
	if got := rc.do("SLOWLOG", "RESET"); got != "+OK" {
		t.Fatal(got)
	}
	args := []string{"BF.MADD", "k"}
	for i := 0; i < 40; i++ {
		args = append(args, "item"+strconv.Itoa(i))
	}
	args[2] = strings.Repeat("x", 200)
	rc.do(args...)
	got := rc.do("SLOWLOG", "GET", "1")
	// [id time µs [args] addr name]
	want := regexp.MustCompile(`^\[\[:\d+ :\d+ :\d+ \["BF.MADD" "k" "x{128}\.\.\. \(72 more bytes\)" ("item\d+" ){28}"\.\.\. \(11 more arguments\)"\] "` +
		regexp.QuoteMeta(rc.c.LocalAddr().String()) + `" "tester"\]\]$`)
	if !want.MatchString(got) {
		t.Fatalf("SLOWLOG GET 1: %s", got)
	}
	if got := rc.do("SLOWLOG", "LEN"); got != ":3" { // as in Redis: SLOWLOG RESET, BF.MADD, SLOWLOG GET
		t.Errorf("SLOWLOG LEN %s", got)
	}
	rc.do("CONFIG", "SET", "slowlog-max-len", "3")
	for i := 0; i < 5; i++ {
		rc.do("PING")
	}
	if got := rc.do("SLOWLOG", "LEN"); got != ":3" {
		t.Errorf("SLOWLOG LEN with max-len 3: %s", got)
	}
	for i := 0; i < 20; i++ {
		rc.do("ECHO", strconv.Itoa(i))
	}
	// Newest first: ECHO 19, 18, 17.
	if got := rc.do("SLOWLOG", "GET", "-1"); !regexp.MustCompile(`^\[\[:\d+ :\d+ :\d+ \["ECHO" "19"\] \S+ "tester"\] \[:\d+ :\d+ :\d+ \["ECHO" "18"\] \S+ "tester"\] \[:\d+ :\d+ :\d+ \["ECHO" "17"\] \S+ "tester"\]\]$`).MatchString(got) {
		t.Errorf("SLOWLOG GET -1 with max-len 3: %s", got)
	}
	rc.do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
	rc.do("SLOWLOG", "RESET")
	rc.do("PING")
	if got := rc.do("SLOWLOG", "LEN"); got != ":0" {
		t.Errorf("slow log disabled but LEN %s", got)
	}
	if got := rc.do("SLOWLOG", "GET", "-2"); got != "-ERR count should be greater than or equal to -1" {
		t.Error(got)
	}
	if got := rc.do("SLOWLOG", "HELP"); !strings.Contains(got, "+RESET") {
		t.Error(got)
	}
}

func TestInfoSections(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer c.Close()
	c.Do(ctx, "BF.ADD", "a", "x")
	c.Do(ctx, "BF.ADD", "a", "y")
	c.Do(ctx, "BF.ADD", "a") // arity, checked by the command as RedisBloom does: failed
	if got := dialRaw(t, s.Addr()).do("EXISTS"); got != "-ERR wrong number of arguments for 'exists' command" {
		t.Fatal(got) // arity, checked before the command: rejected
	}
	c.Do(ctx, "BF.RESERVE", "a", "0.1", "10") // exists: failed
	c.Do(ctx, "NOSUCH")
	c.Expire(ctx, "a", time.Hour)
	c.Do(ctx, "BF.ADD", "b", "x")
	info, err := c.Info(ctx, "commandstats", "errorstats", "cpu", "cluster", "keyspace", "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`cmdstat_bf\.add:calls=4,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=0,failed_calls=1`,
		`cmdstat_exists:calls=0,usec=0,usec_per_call=0\.00,rejected_calls=1,failed_calls=0`,
		`cmdstat_bf\.reserve:calls=1,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=0,failed_calls=1`,
		`errorstat_ERR:count=4\r\n`,
		`used_cpu_sys:\d+\.\d{6}\r\nused_cpu_user:\d+\.\d{6}`,
		`cluster_enabled:0`,
		`db0:keys=2,expires=1,avg_ttl=0`,
		`connected_clients:[12]\r\n`,
		`maxclients:10000`,
	} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("INFO lacks %s:\n%s", re, info)
		}
	}
	def, _ := c.Info(ctx).Result()
	every, _ := c.Info(ctx, "everything").Result()
	if strings.Contains(def, "# Commandstats") || !strings.Contains(def, "# Errorstats") || !strings.Contains(def, "# Keyspace") {
		t.Errorf("INFO default sections wrong:\n%s", def)
	}
	for _, sec := range []string{"Server", "Clients", "Memory", "Persistence", "Stats", "CPU", "Commandstats", "Errorstats", "Cluster", "Keyspace"} {
		if !strings.Contains(every, "# "+sec+"\r\n") {
			t.Errorf("INFO everything lacks %s", sec)
		}
	}
	if err := c.Do(ctx, "CONFIG", "RESETSTAT").Err(); err != nil {
		t.Fatal(err)
	}
	info, _ = c.Info(ctx, "commandstats", "errorstats").Result()
	if strings.Contains(info, "bf.add") || strings.Contains(info, "errorstat_") {
		t.Errorf("after RESETSTAT:\n%s", info)
	}
	// PERSIST and DEL keep the expires count.
	c.Persist(ctx, "a")
	c.Del(ctx, "b")
	info, _ = c.Info(ctx, "keyspace").Result()
	if !strings.Contains(info, "db0:keys=1,expires=0,avg_ttl=0") {
		t.Errorf("keyspace after PERSIST and DEL: %s", info)
	}
}

func TestClientCommands(t *testing.T) { bothPaths(t, testClientCommands) }

func testClientCommands(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: gpc})
	me := dialRaw(t, s.Addr())
	other := dialRaw(t, s.Addr())
	third := dialRaw(t, s.Addr())
	third.do("PING") // the server knows a client once it has answered it
	me.do("CLIENT", "SETNAME", "me")
	other.do("CLIENT", "SETNAME", "other")
	otherID := strings.TrimPrefix(other.do("CLIENT", "ID"), ":")
	other.do("MULTI")
	other.do("PING")
	if otherID == "" {
		t.Fatal("no id")
	}
	list := me.do("CLIENT", "LIST")
	for _, re := range []string{
		`id=\d+ addr=` + regexp.QuoteMeta(me.c.LocalAddr().String()) + ` laddr=` + regexp.QuoteMeta(s.Addr()) + ` fd=[1-9]\d* name=me age=\d+ idle=\d+ flags=N db=0 .* cmd=client\|list user=default redir=-1 resp=2`,
		`id=` + otherID + ` addr=\S+ laddr=\S+ fd=[1-9]\d* name=other age=\d+ idle=\d+ flags=x db=0 sub=0 psub=0 ssub=0 multi=1 `,
	} {
		if !regexp.MustCompile(re).MatchString(list) {
			t.Errorf("CLIENT LIST lacks %s:\n%s", re, list)
		}
	}
	if got := me.do("CLIENT", "LIST", "ID", otherID); strings.Count(got, "id=") != 1 || !strings.Contains(got, "name=other") {
		t.Errorf("CLIENT LIST ID: %s", got)
	}
	if got := me.do("CLIENT", "NO-EVICT", "on"); got != "+OK" {
		t.Fatal(got)
	}
	// Redis prints N only when no other flag applies: no-evict alone is "e".
	if got := me.do("CLIENT", "INFO"); !strings.Contains(got, "flags=e ") || strings.Count(got, "id=") != 1 {
		t.Errorf("CLIENT INFO: %s", got)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "KILL", "ID", "0"}, "-ERR client-id should be greater than 0"},
		{[]string{"CLIENT", "KILL", "ADDR", "1.2.3.4:5"}, ":0"},
		{[]string{"CLIENT", "KILL", "1.2.3.4:5"}, "-ERR No such client"},
		{[]string{"CLIENT", "KILL", "USER", "bob"}, "-ERR No such user 'bob'"},
		{[]string{"CLIENT", "KILL", "SKIPME", "maybe"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "TYPE", "pubsub"}, ":0"},
		{[]string{"CLIENT", "KILL", "TYPE", "bogus"}, "-ERR Unknown client type 'bogus'"},
		{[]string{"CLIENT", "NO-EVICT", "maybe"}, "-ERR syntax error"},
		{[]string{"CLIENT", "KILL", "ID", otherID}, ":1"},
	} {
		if got := me.do(c.args...); got != c.want {
			t.Errorf("%v: got %s, want %s", c.args, got, c.want)
		}
	}
	expectClosed(t, other)
	// The old form, by address.
	if got := me.do("CLIENT", "KILL", third.c.LocalAddr().String()); got != "+OK" {
		t.Fatal(got)
	}
	expectClosed(t, third)
	// USER default, SKIPME yes (the default) spares the caller.
	fourth := dialRaw(t, s.Addr())
	fourth.do("PING")
	if got := me.do("CLIENT", "KILL", "USER", "default"); got != ":1" {
		t.Errorf("KILL USER default: %s", got)
	}
	expectClosed(t, fourth)
	// CLIENT REPLY OFF / SKIP / ON.
	me.send("CLIENT", "REPLY", "OFF")
	me.send("ECHO", "hidden")
	me.send("CLIENT", "REPLY", "ON")
	if got := me.read(); got != "+OK" {
		t.Fatalf("after REPLY OFF the first reply is %s", got)
	}
	me.send("CLIENT", "REPLY", "SKIP")
	me.send("ECHO", "skipped")
	me.send("ECHO", "shown")
	if got := me.read(); got != `"shown"` {
		t.Fatalf("after REPLY SKIP: %s", got)
	}
	// SKIPME no: the caller itself, after its reply.
	if got := me.do("CLIENT", "KILL", "LADDR", s.Addr(), "SKIPME", "no"); got != ":1" {
		t.Errorf("KILL LADDR SKIPME no: %s", got)
	}
	expectClosed(t, me)
}

func TestReset(t *testing.T) { bothPaths(t, testReset) }

func testReset(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, RequirePass: "pw", goroutinePerConn: gpc})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("RESET"); got != "+RESET" {
		t.Fatalf("RESET before AUTH: %s", got)
	}
	rc.do("HELLO", "3", "AUTH", "default", "pw", "SETNAME", "n1")
	rc.do("MULTI")
	rc.do("BF.ADD", "k", "x")
	if got := rc.do("RESET"); got != "+RESET" {
		t.Fatal(got)
	}
	if got := rc.do("PING"); got != "-NOAUTH Authentication required." {
		t.Fatalf("after RESET with a password: %s", got)
	}
	rc.do("AUTH", "pw")
	if got := rc.do("EXEC"); got != "-ERR EXEC without MULTI" {
		t.Errorf("EXEC after RESET: %s", got)
	}
	if got := rc.do("EXISTS", "k"); got != ":0" {
		t.Errorf("a queued command ran: EXISTS %s", got)
	}
	if got := rc.do("CLIENT", "GETNAME"); got != "nil" {
		t.Errorf("name after RESET: %s", got)
	}
	// HELLO without a version answers in the connection's protocol:
	// RESP2 (a flat array) after RESET.
	if got := rc.do("HELLO"); !strings.HasPrefix(got, "[") || !strings.Contains(got, `"proto" :2`) {
		t.Errorf("protocol after RESET: %s", got)
	}
}

func TestMetricsAuthAndFilterSeries(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0", MetricsPassword: "scrape", MetricsKeys: 100})
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	defer c.Close()
	c.Do(ctx, "BF.RESERVE", "f", "0.01", "1000")
	for i := 0; i < 300; i++ {
		c.Do(ctx, "BF.ADD", "f", strconv.Itoa(i))
	}
	c.Do(ctx, "CF.RESERVE", "cf", "1000")
	for i := 0; i < 100; i++ {
		c.Do(ctx, "CF.ADD", "cf", strconv.Itoa(i))
	}
	url := "http://" + s.MetricsAddr() + "/metrics"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without credentials: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.SetBasicAuth("prometheus", "wrong")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics with a wrong password: %d", resp.StatusCode)
	}
	req.SetBasicAuth("prometheus", "scrape")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics with the password: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + s.MetricsAddr() + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz is open to probes: %v %v", resp, err)
	}
	s.db.Lock()
	bf, cf := s.db.Lookup("f").BF, s.db.Lookup("cf").CF
	wantBF := []float64{bf.FillRatio(), bf.EstimatedFPR(), float64(bf.Size)}
	wantCF := []float64{cf.FillRatio(), cf.EstimatedFPR(), float64(cf.NumItems)}
	s.db.Unlock()
	for key, want := range map[string][]float64{`key="f",type="bloom"`: wantBF, `key="cf",type="cuckoo"`: wantCF} {
		for i, name := range []string{"bloomkit_filter_fill_ratio", "bloomkit_filter_estimated_fpr", "bloomkit_filter_items"} {
			m := regexp.MustCompile(name + `\{` + key + `\} (\S+)`).FindSubmatch(body)
			if m == nil {
				t.Errorf("no %s{%s}", name, key)
				continue
			}
			v, _ := strconv.ParseFloat(string(m[1]), 64)
			if d := v - want[i]; d > 1e-9 || d < -1e-9 || want[i] == 0 {
				t.Errorf("%s{%s} = %v, want %v", name, key, v, want[i])
			}
		}
	}
}

// FLUSHALL frees the filters off the lock while scrapes read them: no
// race, no use after free (run under -race), and the keyspace is empty at
// once.
func TestFlushAllWhileScraping(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0", MetricsKeys: 100})
	rc := dialRaw(t, s.Addr())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			invalidateFilterStats(s)
			if resp, err := http.Get("http://" + s.MetricsAddr() + "/metrics"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	for round := 0; round < 5; round++ {
		for i := 0; i < 8; i++ {
			// 1.7 MiB each: large arrays, returned to the system by Free.
			if got := rc.do("BF.RESERVE", "big"+strconv.Itoa(i), "0.001", "1000000"); got != "+OK" {
				t.Fatal(got)
			}
			rc.do("BF.ADD", "big"+strconv.Itoa(i), "x")
		}
		time.Sleep(20 * time.Millisecond)
		if got := rc.do("FLUSHALL"); got != "+OK" {
			t.Fatal(got)
		}
		if got := rc.do("DBSIZE"); got != ":0" {
			t.Fatalf("DBSIZE after FLUSHALL: %s", got)
		}
		if got := rc.do("INFO", "memory"); !strings.Contains(got, "used_memory:0\\r\\n") {
			t.Fatalf("used_memory after FLUSHALL: %s", got)
		}
	}
	close(stop)
	<-done
}

// The config file shown in docs/operations.md reads as documented.
func TestDocumentedConfigFile(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```text\n(# /etc/bloomkit.conf\n.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no config example in docs/operations.md")
	}
	file := filepath.Join(t.TempDir(), "bloomkit.conf")
	if err := os.WriteFile(file, m[1], 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg Config
	if err := ReadConfigFile(file, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:6479" || cfg.Dir != "/var/lib/bloomkit" || cfg.AppendFsync != "everysec" ||
		cfg.MaxMemory != 4<<30 || cfg.Timeout != 300*time.Second || cfg.ConfigFile != file {
		t.Errorf("read %+v", cfg)
	}
	// Errors name the file and line.
	os.WriteFile(file, []byte("port 6479\nmaxclients many\n"), 0o600)
	if err := ReadConfigFile(file, &cfg); err == nil || !strings.Contains(err.Error(), file+":2: maxclients") {
		t.Errorf("bad value: %v", err)
	}
	os.WriteFile(file, []byte("loglevel debug\nmaxmemroy 1gb\n"), 0o600)
	if err := ReadConfigFile(file, &cfg); err == nil || !strings.Contains(err.Error(), file+`:2: unknown directive "maxmemroy"`) {
		t.Errorf("unknown directive: %v", err)
	}
}
