package server

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// objectProbe is what OBJECT and DEBUG OBJECT answer for key, as text.
func objectProbe(ctx context.Context, c *redis.Client, key string) []string {
	var out []string
	for _, sub := range []string{"ENCODING", "REFCOUNT", "FREQ"} {
		v, err := c.Do(ctx, "OBJECT", sub, key).Result()
		if err != nil {
			out = append(out, sub+" err "+err.Error())
			continue
		}
		out = append(out, sub+" "+strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(toString(v), "\n", " "), "  ", " ")))
	}
	return out
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64:
		return itoa(v)
	case nil:
		return "nil"
	}
	return "?"
}

// OBJECT ENCODING, REFCOUNT and FREQ, HELP and the errors answer as a real
// redis-server 7 answers them, for strings of every encoding and (with
// the RedisBloom module) for filters, which Redis reports as module
// values ("raw").
func TestObjectLikeRedis(t *testing.T) {
	var extra []string
	module := os.Getenv(redistest.ModuleEnv)
	if module != "" {
		if _, err := os.Stat(module); err != nil {
			module = ""
		}
	}
	if module != "" {
		extra = append(extra, "--loadmodule", module)
	}
	rs := redistest.Start(t, append(extra, "--enable-debug-command", "yes")...)
	s := startServer(t, Config{NoPersistence: true, EnableDebugCommand: "yes"})
	ctx := context.Background()
	ours, theirs := newClient(t, s.Addr(), 2), rs.Client(t)
	values := map[string]string{
		"zero": "0", "small": "100", "shared-max": "9999", "unshared": "10000", "neg": "-5", "big": "123456789012",
		"lead0": "007", "negzero": "-0", "plus": "+1", "max": "9223372036854775807", "over": "9223372036854775808",
		"word": "hello", "e44": strings.Repeat("a", 44), "r45": strings.Repeat("a", 45), "empty": "", "space": " 1",
	}
	keys := []string{"missing"}
	for k, v := range values {
		for _, c := range []*redis.Client{ours, theirs} {
			if err := c.Set(ctx, k, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		keys = append(keys, k)
	}
	if module != "" {
		for _, c := range []*redis.Client{ours, theirs} {
			c.Do(ctx, "BF.ADD", "bf", "x")
			c.Do(ctx, "CF.ADD", "cf", "x")
		}
		keys = append(keys, "bf", "cf")
	}
	for _, k := range keys {
		if got, want := objectProbe(ctx, ours, k), objectProbe(ctx, theirs, k); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s (%q):\n got %q\nwant %q", k, values[k], got, want)
		}
		// DEBUG OBJECT: the same but for the address and the LRU clock,
		// and the serialized length of what LZF compresses (values over
		// 20 bytes: bloomkit's compressor is not byte for byte Redis's).
		same := regexp.MustCompile(`refcount:\d+ encoding:\w+ serializedlength:\d+`)
		if v, ok := values[k]; !ok || len(v) > 20 {
			same = regexp.MustCompile(`refcount:\d+ encoding:\w+`)
		}
		g, _ := ours.Do(ctx, "DEBUG", "OBJECT", k).Text()
		w, _ := theirs.Do(ctx, "DEBUG", "OBJECT", k).Text()
		if same.FindString(g) != same.FindString(w) {
			t.Errorf("DEBUG OBJECT %s (%q):\n got %q\nwant %q", k, values[k], g, w)
		}
	}
	for _, args := range [][]any{{"OBJECT", "HELP"}, {"OBJECT", "FOO", "k"}, {"OBJECT", "ENCODING"}, {"OBJECT", "HELP", "x"}, {"OBJECT"}} {
		g, gerr := ours.Do(ctx, args...).Result()
		w, werr := theirs.Do(ctx, args...).Result()
		if strings.Join(strings.Fields(toAny(g)), " ") != strings.Join(strings.Fields(toAny(w)), " ") || errText2(gerr) != errText2(werr) {
			t.Errorf("%v:\n got %v %v\nwant %v %v", args, g, gerr, w, werr)
		}
	}
}

func toAny(v any) string {
	if a, ok := v.([]any); ok {
		var b strings.Builder
		for _, x := range a {
			b.WriteString(toString(x) + "\n")
		}
		return b.String()
	}
	return toString(v)
}

func errText2(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// OBJECT IDLETIME is the time since the key's last access, to the minute;
// OBJECT itself, EXISTS, TYPE and TTL are no access (Redis's
// LOOKUP_NOTOUCH), a read is.
func TestObjectIdletime(t *testing.T) {
	clock := newFakeClock(time.Unix(5_000_000, 0))
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	rc := dialRaw(t, s.Addr())
	mustDo(t, rc, ":1", "BF.ADD", "bf", "x")
	mustDo(t, rc, "+OK", "SET", "s", "v")
	mustDo(t, rc, ":0", "OBJECT", "IDLETIME", "bf")
	clock.Add(10 * time.Minute)
	poll.True(t, 10*time.Second, "IDLETIME 600", func() bool { return rc.do("OBJECT", "IDLETIME", "bf") == ":600" })
	mustDo(t, rc, ":600", "OBJECT", "IDLETIME", "bf") // OBJECT did not touch it
	mustDo(t, rc, ":1", "BF.EXISTS", "bf", "x")
	mustDo(t, rc, ":0", "OBJECT", "IDLETIME", "bf")
	mustDo(t, rc, "+string", "TYPE", "s")
	mustDo(t, rc, ":1", "EXISTS", "s")
	mustDo(t, rc, ":-1", "TTL", "s")
	mustDo(t, rc, ":600", "OBJECT", "IDLETIME", "s") // nor did TYPE, EXISTS, TTL
	mustDo(t, rc, `"v"`, "GET", "s")
	mustDo(t, rc, ":0", "OBJECT", "IDLETIME", "s")
	mustDo(t, rc, "nil", "OBJECT", "IDLETIME", "missing")
	if got := rc.do("DEBUG", "OBJECT", "s"); !strings.HasPrefix(got, "-ERR DEBUG command not allowed") {
		t.Errorf("DEBUG with enable-debug-command no: %s", got)
	}
}

// DEBUG is refused unless enable-debug-command allows it (yes, or local
// for a client on this machine), as in Redis 7; DEBUG OBJECT and SLEEP
// answer as Redis's, through redis-cli.
func TestDebugCommand(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	for _, mode := range []string{"no", "local", "yes"} {
		t.Run(mode, func(t *testing.T) {
			s := startServer(t, Config{NoPersistence: true, EnableDebugCommand: mode})
			host, port, _ := net.SplitHostPort(s.Addr())
			run := func(args ...string) string {
				t.Helper()
				out, err := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
				}
				return strings.TrimSpace(string(out))
			}
			run("SET", "s", "hello")
			run("SET", "n", "42")
			run("BF.ADD", "bf", "x")
			got := run("DEBUG", "OBJECT", "s")
			if mode == "no" {
				if !strings.HasPrefix(got, "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\"") {
					t.Fatalf("DEBUG OBJECT with enable-debug-command no: %q", got)
				}
				return
			}
			if !regexp.MustCompile(`^Value at:0x[0-9a-f]+ refcount:1 encoding:embstr serializedlength:6 lru:\d+ lru_seconds_idle:0$`).MatchString(got) {
				t.Errorf("DEBUG OBJECT s: %q", got)
			}
			if got := run("DEBUG", "OBJECT", "n"); !strings.Contains(got, " refcount:2147483647 encoding:int serializedlength:2 ") {
				t.Errorf("DEBUG OBJECT n: %q", got)
			}
			if got := run("DEBUG", "OBJECT", "bf"); !strings.Contains(got, " refcount:1 encoding:raw ") {
				t.Errorf("DEBUG OBJECT bf: %q", got)
			}
			if got := run("DEBUG", "OBJECT", "missing"); got != "ERR no such key" {
				t.Errorf("DEBUG OBJECT missing: %q", got)
			}
			if got := run("DEBUG", "FOO"); got != "ERR unknown subcommand or wrong number of arguments for 'FOO'. Try DEBUG HELP." {
				t.Errorf("DEBUG FOO: %q", got)
			}
			// DEBUG SLEEP stops the server: another client waits.
			var last int64
			for _, c := range s.sessionList() {
				last = max(last, c.ID)
			}
			start := time.Now()
			done := make(chan string, 1)
			go func() {
				out, _ := exec.Command(cli, "-h", host, "-p", port, "DEBUG", "SLEEP", "0.5").CombinedOutput()
				done <- strings.TrimSpace(string(out))
			}()
			poll.True(t, 10*time.Second, "DEBUG SLEEP running", func() bool {
				for _, c := range s.sessionList() {
					if cc := c.curCmd.Load(); c.ID > last && cc != nil && cc.name == "debug" {
						return true
					}
				}
				return false
			})
			run("BF.EXISTS", "bf", "x")
			if d := time.Since(start); d < 500*time.Millisecond {
				t.Errorf("a command ran %v after DEBUG SLEEP 0.5 began", d)
			}
			if got := <-done; got != "OK" {
				t.Errorf("DEBUG SLEEP: %q", got)
			}
		})
	}
}

// DEBUG RELOAD saves a snapshot and loads it back: every key, its value
// and expiry are what they were, and nothing is left unsaved; its options
// and a server without a data directory are refused.
func TestDebugReload(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, Config{EnableDebugCommand: "yes"})
	c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
	for i := range 50 {
		c.Do(ctx, "BF.ADD", "bf", i)
		c.Do(ctx, "CF.ADD", "cf", i)
	}
	c.Set(ctx, "s", "v", time.Hour)
	if err := c.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if n, err := c.Do(ctx, "BF.EXISTS", "bf", i).Int(); err != nil || n != 1 {
			t.Fatalf("BF.EXISTS bf %d after DEBUG RELOAD: %d %v", i, n, err)
		}
		if n, err := c.Do(ctx, "CF.EXISTS", "cf", i).Int(); err != nil || n != 1 {
			t.Fatalf("CF.EXISTS cf %d after DEBUG RELOAD: %d %v", i, n, err)
		}
	}
	if v, err := c.Get(ctx, "s").Result(); err != nil || v != "v" {
		t.Fatalf("GET s after DEBUG RELOAD: %q %v", v, err)
	}
	if ttl, err := c.TTL(ctx, "s").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
		t.Fatalf("TTL s after DEBUG RELOAD: %v %v", ttl, err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 3 {
		t.Fatalf("DBSIZE after DEBUG RELOAD: %d %v", n, err)
	}
	if v := infoFieldOf(t, c, "persistence", "rdb_changes_since_last_save"); v != "0" {
		t.Errorf("rdb_changes_since_last_save:%s after DEBUG RELOAD", v)
	}
	if err := c.Do(ctx, "DEBUG", "RELOAD", "NOSAVE").Err(); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("DEBUG RELOAD NOSAVE: %v", err)
	}
	m := startServer(t, Config{NoPersistence: true, EnableDebugCommand: "yes"})
	if err := newClient(t, m.Addr(), 2).Do(ctx, "DEBUG", "RELOAD").Err(); err == nil || !strings.Contains(err.Error(), "data directory") {
		t.Errorf("DEBUG RELOAD without persistence: %v", err)
	}
}

// DEBUG RELOAD while another client writes: no acknowledged write is lost
// (the reload swaps the snapshot in only if nothing changed since its
// point in time, and fails after a few tries otherwise).
func TestDebugReloadDuringWrites(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, Config{EnableDebugCommand: "yes"})
	c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
	w := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
	stop := make(chan struct{})
	acked := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				acked <- n
				return
			default:
			}
			if err := w.Do(ctx, "BF.ADD", "bf", n).Err(); err == nil {
				n++
			}
		}
	}()
	for range 3 {
		if err := c.Do(ctx, "DEBUG", "RELOAD").Err(); err != nil && err.Error() != "ERR Error trying to load the RDB dump, check server logs." {
			t.Fatal(err)
		}
	}
	close(stop)
	n := <-acked
	for i := range n {
		if got, err := c.Do(ctx, "BF.EXISTS", "bf", i).Int(); err != nil || got != 1 {
			t.Fatalf("acknowledged item %d of %d lost across DEBUG RELOAD: %d %v", i, n, got, err)
		}
	}
}
