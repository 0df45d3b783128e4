package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/redis/go-redis/v9"
)

// gatedDir is a data directory whose reads wait at a gate: while it is
// shut, each read passes at most gateChunk bytes and only for a token
// (pass), so a test holds a load in the middle for as long as it likes.
type gatedDir struct {
	aof.Dir
	tokens chan struct{}
	opened chan struct{}
	once   sync.Once
}

const gateChunk = 4096

func newGatedDir(t *testing.T, dir string) *gatedDir {
	t.Helper()
	od, err := aof.NewOSDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &gatedDir{Dir: od, tokens: make(chan struct{}, 1<<16), opened: make(chan struct{})}
}

// pass lets n more reads through the shut gate.
func (d *gatedDir) pass(n int) {
	for range n {
		d.tokens <- struct{}{}
	}
}

// open lets every read through from now on.
func (d *gatedDir) open() { d.once.Do(func() { close(d.opened) }) }

func (d *gatedDir) Open(name string) (aof.ReadFile, error) {
	f, err := d.Dir.Open(name)
	if err != nil {
		return nil, err
	}
	return &gatedFile{ReadFile: f, d: d}, nil
}

type gatedFile struct {
	aof.ReadFile
	d *gatedDir
}

func (f *gatedFile) Read(p []byte) (int, error) {
	select {
	case <-f.d.opened:
	default:
		select {
		case <-f.d.tokens:
			p = p[:min(len(p), gateChunk)]
		case <-f.d.opened:
		}
	}
	return f.ReadFile.Read(p)
}

// writeLoadingData fills dir with a snapshot and a log after it: filters k0…k9
// (item "a"), a large filter "big" and the string "s" in the snapshot,
// l0…l99 in the log. It returns what each key must answer.
func writeLoadingData(t *testing.T, dir string) {
	t.Helper()
	s := startServer(t, Config{Dir: dir})
	c := dialRaw(t, s.Addr())
	for i := range 10 {
		c.do("BF.ADD", "k"+strconv.Itoa(i), "a")
	}
	if got := c.do("BF.RESERVE", "big", "0.001", "200000"); got != "+OK" {
		t.Fatal(got)
	}
	c.do("SET", "s", "v")
	if got := c.do("SAVE"); got != "+OK" {
		t.Fatal(got)
	}
	for i := range 100 {
		c.do("BF.ADD", "l"+strconv.Itoa(i), "b")
	}
	s.Close()
}

// checkLoadedData checks what writeLoadingData wrote, through c.
func checkLoadedData(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for i := range 10 {
		if n, err := c.Do(ctx, "BF.EXISTS", "k"+strconv.Itoa(i), "a").Int(); err != nil || n != 1 {
			t.Fatalf("k%d: %d %v", i, n, err)
		}
	}
	for i := range 100 {
		if n, err := c.Do(ctx, "BF.EXISTS", "l"+strconv.Itoa(i), "b").Int(); err != nil || n != 1 {
			t.Fatalf("l%d: %d %v", i, n, err)
		}
	}
	if v, err := c.Get(ctx, "s").Result(); err != nil || v != "v" {
		t.Fatalf("s: %q %v", v, err)
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 112 {
		t.Fatalf("DBSIZE %d %v", n, err)
	}
}

// dirState is each file of dir with its contents' hash.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %x", e.Name(), sha256.Sum256(b)))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// startLoading starts a LoadWhileServing server on dir, its reads held
// at the gate. The caller opens the gate.
func startLoading(t *testing.T, dir string, gd *gatedDir) (*Server, chan error) {
	t.Helper()
	cfg := Config{Dir: dir, dataDir: gd, LoadWhileServing: true, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Logger: testLogger(t)}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		gd.open()
		s.Close()
	})
	return s, done
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// persistField is one field of INFO persistence.
func persistField(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	return infoFieldOf(t, c, "persistence", name)
}

// infoFieldOf is one field of an INFO section.
func infoFieldOf(t *testing.T, c *redis.Client, section, name string) string {
	t.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO while loading: %v", err)
	}
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return v
		}
	}
	return ""
}

// A server loading its data accepts clients at once, as redis-server
// does: data commands (PING too, as in Redis 7) are answered -LOADING,
// INFO, CLIENT, CONFIG GET, HELLO and HELP are served, INFO shows
// loading:1 and bytes read that grow, /livez is 200 and /readyz 503
// "loading"; once loaded, everything is there and /readyz is 200.
func TestServeWhileLoading(t *testing.T) {
	dir := t.TempDir()
	writeLoadingData(t, dir)
	gd := newGatedDir(t, dir)
	s, done := startLoading(t, dir, gd)
	ctx := context.Background()
	c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })

	if v := persistField(t, c, "loading"); v != "1" {
		t.Fatalf("loading:%s, want 1", v)
	}
	for _, cmd := range [][]any{{"BF.ADD", "k0", "x"}, {"GET", "s"}, {"BF.EXISTS", "k0", "a"}, {"PING"}, {"DBSIZE"}, {"MEMORY", "USAGE", "s"}, {"SAVE"}, {"BGSAVE"}} {
		if err := c.Do(ctx, cmd...).Err(); err == nil || err.Error() != errLoading {
			t.Errorf("%v while loading: %v, want %s", cmd, err, errLoading)
		}
	}
	for _, cmd := range [][]any{{"CLIENT", "LIST"}, {"CONFIG", "GET", "maxmemory"}, {"HELLO", "2"}, {"MEMORY", "HELP"}, {"COMMAND", "COUNT"}, {"ROLE"}, {"LASTSAVE"}} {
		if cmd[0] == "LASTSAVE" {
			// LASTSAVE has no "loading" flag in Redis 7 either.
			if err := c.Do(ctx, cmd...).Err(); err == nil || err.Error() != errLoading {
				t.Errorf("%v while loading: %v, want %s", cmd, err, errLoading)
			}
			continue
		}
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Errorf("%v while loading: %v", cmd, err)
		}
	}
	// A transaction with a refused command is discarded.
	pipe := c.TxPipeline()
	pipe.Do(ctx, "BF.ADD", "k0", "y")
	if _, err := pipe.Exec(ctx); err == nil || !strings.Contains(err.Error(), "LOADING") && !strings.Contains(err.Error(), "EXECABORT") {
		t.Errorf("MULTI/BF.ADD/EXEC while loading: %v", err)
	}
	for _, p := range []string{"/livez"} {
		if code, body := httpGet(t, "http://"+s.MetricsAddr()+p); code != 200 {
			t.Errorf("%s while loading: %d %q", p, code, body)
		}
	}
	for _, p := range []string{"/readyz", "/healthz"} {
		if code, body := httpGet(t, "http://"+s.MetricsAddr()+p); code != 503 || body != "loading\n" {
			t.Errorf("%s while loading: %d %q, want 503 loading", p, code, body)
		}
	}
	if code, _ := httpGet(t, "http://"+s.MetricsAddr()+"/metrics"); code != 200 {
		t.Errorf("/metrics while loading: %d", code)
	}
	// Progress: the bytes read grow as reads pass the gate (the logs are
	// checked first; the total is known after that).
	gd.pass(5)
	var total int64
	poll.True(t, 10*time.Second, "loading_total_bytes", func() bool {
		total, _ = strconv.ParseInt(persistField(t, c, "loading_total_bytes"), 10, 64)
		return total > 0
	})
	if total < 200000 {
		t.Fatalf("loading_total_bytes %d: less than the snapshot", total)
	}
	first, _ := strconv.ParseInt(persistField(t, c, "loading_loaded_bytes"), 10, 64)
	gd.pass(20)
	poll.True(t, 10*time.Second, "loading_loaded_bytes to grow", func() bool {
		n, _ := strconv.ParseInt(persistField(t, c, "loading_loaded_bytes"), 10, 64)
		return n > first && n < total
	})
	if perc := persistField(t, c, "loading_loaded_perc"); perc == "" || perc == "0.00" {
		t.Errorf("loading_loaded_perc %q", perc)
	}
	for _, f := range []string{"loading_start_time", "loading_rdb_used_mem", "loading_eta_seconds"} {
		if persistField(t, c, f) == "" {
			t.Errorf("INFO persistence has no %s while loading", f)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Serve ended while loading: %v", err)
	default:
	}
	// A maxmemory set while loading is the limit once loaded (no limit
	// applies to the load itself).
	if err := c.ConfigSet(ctx, "maxmemory", "5gb").Err(); err != nil {
		t.Fatal(err)
	}
	// What may run while the loader writes, running while it finishes
	// (the race detector watches): INFO, CLIENT LIST, CONFIG SET, the
	// metrics and probes.
	hammer := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
	stopHammer := make(chan struct{})
	hammered := make(chan struct{})
	go func() {
		defer close(hammered)
		for i := 0; ; i++ {
			select {
			case <-stopHammer:
				return
			default:
			}
			hammer.Info(ctx, "everything")
			hammer.Do(ctx, "CLIENT", "LIST")
			hammer.Do(ctx, "CONFIG", "SET", "appendfsync", []string{"always", "everysec"}[i%2])
			for _, p := range []string{"/metrics", "/readyz", "/healthz"} {
				if resp, err := http.Get("http://" + s.MetricsAddr() + p); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	}()
	gd.open()
	poll.Until(t, 10*time.Second, func() error { return c.Ping(ctx).Err() })
	close(stopHammer)
	<-hammered
	if v := persistField(t, c, "loading"); v != "0" {
		t.Errorf("loading:%s once loaded", v)
	}
	if persistField(t, c, "loading_total_bytes") != "" {
		t.Error("loading_* fields once loaded")
	}
	for _, p := range []string{"/readyz", "/healthz", "/livez"} {
		if code, body := httpGet(t, "http://"+s.MetricsAddr()+p); code != 200 {
			t.Errorf("%s once loaded: %d %q", p, code, body)
		}
	}
	select {
	case <-s.Loaded():
	default:
		t.Error("Loaded not closed once loaded")
	}
	checkLoadedData(t, c)
	if m := infoFieldOf(t, c, "memory", "maxmemory"); m != "5368709120" {
		t.Errorf("maxmemory once loaded: %s, want the 5gb set while loading", m)
	}
	if err := c.Do(ctx, "BF.ADD", "after", "z").Err(); err != nil {
		t.Fatal(err)
	}
}

// Shutdown (SIGTERM) or SHUTDOWN during the load saves nothing — the
// keyspace is partial — and leaves the files as they were: a restart has
// everything.
func TestShutdownWhileLoading(t *testing.T) {
	for _, how := range []string{"Shutdown", "SHUTDOWN", "Close"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			writeLoadingData(t, dir)
			before := dirState(t, dir)
			gd := newGatedDir(t, dir)
			s, done := startLoading(t, dir, gd)
			c := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1 })
			gd.pass(20)
			poll.True(t, 10*time.Second, "some bytes loaded", func() bool {
				n, _ := strconv.ParseInt(persistField(t, c, "loading_loaded_bytes"), 10, 64)
				return n > 0
			})
			stopped := make(chan error, 1)
			switch how {
			case "Shutdown":
				go func() { stopped <- s.Shutdown() }()
			case "Close":
				go func() { stopped <- s.Close() }()
			case "SHUTDOWN":
				// Redis closes the connection without a reply.
				if err := c.Do(context.Background(), "SHUTDOWN").Err(); err == nil || !errors.Is(err, io.EOF) {
					t.Fatalf("SHUTDOWN while loading: %v", err)
				}
				stopped <- nil
			}
			// The loader, held at the gate, notices at its next read.
			poll.True(t, 10*time.Second, "the server to be closing", s.closed.Load)
			gd.open()
			if err := <-stopped; err != nil {
				t.Fatalf("%s while loading: %v", how, err)
			}
			if err := <-done; err != nil {
				t.Fatalf("Serve: %v", err)
			}
			s.Close()
			if after := dirState(t, dir); after != before {
				t.Fatalf("the data directory changed:\nbefore\n%s\nafter\n%s", before, after)
			}
			s2 := startServer(t, Config{Dir: dir})
			checkLoadedData(t, newClient(t, s2.Addr(), 2))
		})
	}
}

// A damaged log stops a LoadWhileServing server with the error New gives
// without it.
func TestLoadWhileServingDamagedLog(t *testing.T) {
	dir := t.TempDir()
	writeLoadingData(t, dir)
	logs, _ := filepath.Glob(filepath.Join(dir, "appendonly.*.aof"))
	if len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	b[40] ^= 0xff // inside the first record, with records after it
	if err := os.WriteFile(logs[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, want := New(Config{Dir: dir, Logger: testLogger(t)})
	if want == nil {
		t.Fatal("New loaded a damaged log")
	}
	s, err := New(Config{Dir: dir, LoadWhileServing: true, Addr: "127.0.0.1:0", Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("New with LoadWhileServing: %v", err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	got := s.Serve()
	s.Close()
	if got == nil || got.Error() != want.Error() || !errors.Is(got, ErrCorrupt) {
		t.Fatalf("Serve: %v\nwant: %v", got, want)
	}
	select {
	case <-s.Loaded():
		t.Error("Loaded closed after a failed load")
	default:
	}
}

// A replica loading its master's full sync serves its old data meanwhile,
// as Redis's repl-diskless-load swapdb: INFO says async_loading:1 (and
// loading:0), and the commands Redis refuses then answer -LOADING.
func TestReplicaAsyncLoading(t *testing.T) {
	m := startServer(t, Config{})
	mustDo(t, dialRaw(t, m.Addr()), ":1", "BF.ADD", "new", "x")
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	testHookAsyncLoad.Store(&hook)
	defer testHookAsyncLoad.Store(nil)
	r := startServer(t, Config{})
	rc := dialRaw(t, r.Addr())
	mustDo(t, rc, ":1", "BF.ADD", "old", "y")
	mustDo(t, rc, "+OK", "REPLICAOF", strings.Split(m.Addr(), ":")[0], strings.Split(m.Addr(), ":")[1])
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the replica never loaded a payload")
	}
	if n := infoNum(t, rc, "persistence", "async_loading"); n != 1 {
		t.Errorf("async_loading:%d while the replica loads", n)
	}
	if n := infoNum(t, rc, "persistence", "loading"); n != 0 {
		t.Errorf("loading:%d while the replica loads asynchronously", n)
	}
	for _, cmd := range [][]string{{"SAVE"}, {"BGSAVE"}, {"REPLICAOF", "NO", "ONE"}} {
		if got := rc.do(cmd...); got != "-"+errLoading {
			t.Errorf("%v while the replica loads: %s", cmd, got)
		}
	}
	mustDo(t, rc, ":1", "BF.EXISTS", "old", "y") // the old data serves
	mustDo(t, rc, "+PONG", "PING")
	close(release)
	poll.True(t, 20*time.Second, "the master's data", func() bool { return rc.do("BF.EXISTS", "new", "x") == ":1" })
	if n := infoNum(t, rc, "persistence", "async_loading"); n != 0 {
		t.Errorf("async_loading:%d once loaded", n)
	}
}
