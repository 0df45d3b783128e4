package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"

	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/redis/go-redis/v9"
)

// restart closes s (without saving when save is false) and starts a new
// server on the same directory.
func restart(t *testing.T, s *Server, save bool) *Server {
	t.Helper()
	if save {
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	} else {
		s.Close()
	}
	return startServer(t, Config{Dir: s.cfg.Dir, AppendFsync: s.cfg.AppendFsync})
}

func TestPersistenceRestart(t *testing.T) {
	for _, save := range []bool{false, true} {
		t.Run(fmt.Sprintf("snapshot=%v", save), func(t *testing.T) {
			s := startServer(t, Config{AppendFsync: "always"})
			rc := dialRaw(t, s.Addr())
			runSteps(t, rc, []step{
				{"BF.RESERVE b 0.01 10", "+OK"},
				{"BF.MADD b " + strings.Repeat("x ", 30) + "y", "[" + ":1 " + strings.Repeat(":0 ", 29) + ":1]"},
				{"CF.ADD c a", ":1"},
				{"CF.ADD c a", ":1"},
				{"CF.DEL c a", ":1"},
				{"BF.ADD gone x", ":1"},
				{"DEL gone", ":1"},
				{"BF.ADD ttl x", ":1"},
				{"EXPIRE ttl 1000", ":1"},
				{"BF.ADD short x", ":1"},
				{"PEXPIRE short 1", ":1"},
				{"RENAME b b2", "+OK"},
			})
			for i := 0; i < 100; i++ {
				rc.do("BF.ADD", "b2", fmt.Sprint("item", i))
			}
			before := rc.do("BF.SCANDUMP", "b2", "0")
			time.Sleep(5 * time.Millisecond)
			s2 := restart(t, s, save)
			rc2 := dialRaw(t, s2.Addr())
			runSteps(t, rc2, []step{
				{"BF.SCANDUMP b2 0", before},
				{"BF.EXISTS b2 item99", ":1"},
				{"CF.COUNT c a", ":1"},
				{"CF.INFO c", "[+Size :1080 +Number of buckets :512 +Number of filters :1 +Number of items inserted :1 +Number of items deleted :1 +Bucket size :2 +Expansion rate :1 +Max iterations :20]"},
				{"EXISTS gone b", ":0"},
				{"EXISTS short", ":0"},
				{"DBSIZE", ":3"},
			})
			if got := rc2.do("TTL", "ttl"); got != ":1000" && got != ":999" && got != ":998" {
				t.Errorf("TTL after restart: %s", got)
			}
		})
	}
}

// A log of a generation before the snapshot must not be applied again
// (CF.ADD is not idempotent), even if its removal did not happen.
func TestSnapshotSupersedesOldLog(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	rc.do("CF.ADD", "c", "a")
	rc.do("CF.ADD", "c", "a")
	aof := filepath.Join(s.cfg.Dir, LogName(1))
	old, err := os.ReadFile(aof)
	if err != nil {
		t.Fatal(err)
	}
	if got := rc.do("SAVE"); got != "+OK" {
		t.Fatal(got)
	}
	s.Close()
	if _, err := os.Stat(aof); !os.IsNotExist(err) {
		t.Errorf("the superseded log is still there: %v", err)
	}
	if err := os.WriteFile(aof, old, 0o644); err != nil { // as if its removal never happened
		t.Fatal(err)
	}
	s2 := startServer(t, Config{Dir: s.cfg.Dir})
	if got := dialRaw(t, s2.Addr()).do("CF.COUNT", "c", "a"); got != ":2" {
		t.Fatalf("CF.COUNT after restart = %s, want :2", got)
	}
}

func TestTornLogIsCut(t *testing.T) {
	for name, tail := range map[string][]byte{
		"partial header": {7, 0, 0},
		"partial record": aof.EncodeRecord(nil, [][]byte{[]byte("BF.ADD"), []byte("b"), []byte("torn")})[:15],
		"zero tail":      make([]byte, 64),
	} {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, Config{AppendFsync: "always"})
			rc := dialRaw(t, s.Addr())
			rc.do("BF.ADD", "b", "kept")
			s.Close()
			aof := filepath.Join(s.cfg.Dir, LogName(1))
			good, _ := os.ReadFile(aof)
			f, _ := os.OpenFile(aof, os.O_WRONLY|os.O_APPEND, 0)
			f.Write(tail)
			f.Close()
			s2 := startServer(t, Config{Dir: s.cfg.Dir})
			rc2 := dialRaw(t, s2.Addr())
			if got := rc2.do("BF.EXISTS", "b", "kept"); got != ":1" {
				t.Errorf("lost an item before the torn record: %s", got)
			}
			if got := rc2.do("BF.EXISTS", "b", "torn"); got != ":0" {
				t.Errorf("torn record applied: %s", got)
			}
			rc2.do("BF.ADD", "b", "after")
			s2.Close()
			now, _ := os.ReadFile(aof)
			if !strings.HasPrefix(string(now), string(good)) || len(now) <= len(good) {
				t.Errorf("log not cut back to %d bytes before appending (now %d)", len(good), len(now))
			}
			s3 := startServer(t, Config{Dir: s.cfg.Dir})
			if got := dialRaw(t, s3.Addr()).do("BF.EXISTS", "b", "after"); got != ":1" {
				t.Errorf("write after the cut lost: %s", got)
			}
		})
	}
}

func TestCorruptLogStopsStartup(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always"})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.ADD", "b", "one")
	rc.do("BF.ADD", "b", "two")
	s.Close()
	logPath := filepath.Join(s.cfg.Dir, LogName(1))
	data, _ := os.ReadFile(logPath)
	data[aof.HeaderLen+aof.RecordHeaderLen+6] ^= 0xff // inside the first record's payload
	os.WriteFile(logPath, data, 0o644)
	_, err := New(Config{Dir: s.cfg.Dir, Logger: testLogger(t), NoPersistence: false})
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), logPath) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("New with a corrupt log: %v", err)
	}
}

func TestCorruptSnapshotStopsStartup(t *testing.T) {
	s := startServer(t, Config{})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.MADD", "b", "x", "y", "z")
	rc.do("CF.ADD", "c", "x")
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(s.cfg.Dir, SnapshotName(2))
	good, _ := os.ReadFile(snap)
	for name, bad := range map[string][]byte{
		"flipped byte": func() []byte { b := append([]byte{}, good...); b[len(b)/2] ^= 0x40; return b }(),
		"truncated":    good[:len(good)-10],
		"bad magic":    append([]byte("XXXXXXXX"), good[8:]...),
		"empty":        {},
	} {
		t.Run(name, func(t *testing.T) {
			os.WriteFile(snap, bad, 0o644)
			_, err := New(Config{Dir: s.cfg.Dir, Logger: testLogger(t)})
			if err == nil || !strings.Contains(err.Error(), snap) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("New with a damaged snapshot: %v", err)
			}
		})
	}
	os.WriteFile(snap, good, 0o644)
	s2 := startServer(t, Config{Dir: s.cfg.Dir})
	if got := dialRaw(t, s2.Addr()).do("BF.CARD", "b"); got != ":3" {
		t.Fatalf("good snapshot: BF.CARD %s", got)
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// buildOnce holds the real bloom binary, built once per test run into
// dir (removed by TestMain) unless make test has built it already.
var buildOnce struct {
	sync.Once
	dir  string
	path string
	err  error
}

// bloomBinary returns the path of the real bloom binary: the one make test
// built into $BLOOMKIT_TEST_BIN (without -race, as this builds it), or one
// built here the first time a test asks.
func bloomBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if prebuilt := os.Getenv("BLOOMKIT_TEST_BIN"); prebuilt != "" {
			buildOnce.path = filepath.Join(prebuilt, "bloom")
			_, buildOnce.err = os.Stat(buildOnce.path)
			return
		}
		dir, err := os.MkdirTemp("", "bloomkit-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.dir = dir
		buildOnce.path = filepath.Join(dir, "bloom")
		out, err := exec.Command("go", "build", "-o", buildOnce.path, "../cmd/bloom").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build ../cmd/bloom: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// TestMain removes the bloom binary bloomBinary built (17 MB in the
// system's temporary directory, left behind by every run before).
func TestMain(m *testing.M) {
	code := m.Run()
	if buildOnce.dir != "" {
		os.RemoveAll(buildOnce.dir)
	}
	os.Exit(code)
}

func startBinary(t *testing.T, bin, dir, addr string, extra ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"serve", "--addr", addr, "--dir", dir}, extra...)
	cmd := exec.Command(bin, args...)
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	// It accepts clients while it loads its data (answering LOADING):
	// started means loaded.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write([]byte("PING\r\n"))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if !strings.HasPrefix(line, "-LOADING") {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill -9 in the middle of a stream of acknowledged BF.ADDs with
// appendfsync always: after a restart every acknowledged item is present.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := bloomBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	srv := startBinary(t, bin, dir, addr, "--appendfsync", "always")
	ctx := context.Background()
	var mu sync.Mutex
	var acked []string
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, Protocol: 2})
			defer c.Close()
			for i := 0; ; i++ {
				item := fmt.Sprintf("w%d-item-%d", w, i)
				var err error
				if i%2 == 0 {
					err = c.BFAdd(ctx, "crash", item).Err()
				} else {
					err = c.BFMAdd(ctx, "crash", item, item+"-m").Err()
				}
				if err != nil {
					return // the server died
				}
				mu.Lock()
				acked = append(acked, item)
				mu.Unlock()
				total.Add(1)
			}
		}(w)
	}
	// Enough acknowledged writes to make the crash meaningful; on a slow
	// machine whatever was acknowledged in a minute is checked.
	poll.Wait(60*time.Second, func() error {
		if total.Load() < 1500 {
			return fmt.Errorf("%d writes", total.Load())
		}
		return nil
	})
	if total.Load() == 0 {
		t.Fatal("no write was acknowledged")
	}
	if err := srv.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	srv.Wait()
	wg.Wait()
	mu.Lock()
	items := append([]string(nil), acked...)
	mu.Unlock()
	t.Logf("%d acknowledged adds before kill -9", len(items))

	addr2 := freePort(t)
	startBinary(t, bin, dir, addr2)
	c := redis.NewClient(&redis.Options{Addr: addr2})
	defer c.Close()
	args := make([]any, 0, len(items))
	for _, it := range items {
		args = append(args, it)
	}
	res, err := c.BFMExists(ctx, "crash", args...).Result()
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for i, ok := range res {
		if !ok {
			missing++
			if missing < 5 {
				t.Errorf("acknowledged item %q lost", items[i])
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged items lost", missing, len(items))
	}
}

// SIGTERM saves a snapshot and exits 0.
func TestSIGTERMSaves(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := bloomBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	srv := startBinary(t, bin, dir, addr, "--appendfsync", "no")
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.BFAdd(context.Background(), "k", "v").Err(); err != nil {
		t.Fatal(err)
	}
	srv.Process.Signal(os.Interrupt)
	if err := srv.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, SnapshotName(2))); err != nil {
		t.Fatalf("no snapshot after SIGINT: %v", err)
	}
	st, _ := os.Stat(filepath.Join(dir, LogName(2)))
	if st == nil || st.Size() != aof.HeaderLen {
		t.Errorf("log not rewritten after the snapshot: %v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, LogName(1))); !os.IsNotExist(err) {
		t.Errorf("the superseded log is still there: %v", err)
	}
}

// When the log cannot be written, the write is not acknowledged (its reply
// is an IOERR), later writes get MISCONF while reads are served, and a
// snapshot taken in the background brings the server back; the write that
// was in doubt is then durable.
func TestLogWriteFailureWithholdsReplies(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always", retryMin: 20 * time.Millisecond})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("BF.ADD", "b", "ok"); got != ":1" {
		t.Fatal(got)
	}
	if got := rc.do("BF.ADD", "other", "ok"); got != ":1" {
		t.Fatal(got)
	}
	s.persist.saveMu.Lock()                                                   // hold off the background rewrite for a moment
	ro, err := os.Open(filepath.Join(s.cfg.Dir, LogName(s.aof.Generation()))) // read-only: writes fail
	if err != nil {
		t.Fatal(err)
	}
	good := s.aof.SwapFile(ro)
	if got := rc.do("BF.ADD", "b", "unlogged"); !strings.HasPrefix(got, "-IOERR the append-only log failed") {
		t.Fatalf("a write that was not logged was answered %s", got)
	}
	good.Close()
	rc2 := dialRaw(t, s.Addr())
	if got := rc2.do("BF.ADD", "c", "x"); !strings.HasPrefix(got, "-MISCONF Errors writing to the AOF file") {
		t.Errorf("write while the log is broken: %s", got)
	}
	if got := rc2.do("BF.EXISTS", "other", "ok"); got != ":1" {
		t.Errorf("reads must still work: %s", got)
	}
	// b's last write is in doubt: no read may reveal it.
	if got := rc2.do("BF.EXISTS", "b", "unlogged"); !strings.HasPrefix(got, "-IOERR") {
		t.Errorf("a read of a key in doubt answered %s", got)
	}
	s.persist.saveMu.Unlock()
	poll.Until(t, 5*time.Second, func() error {
		got := rc2.do("BF.ADD", "b", "y")
		if got == ":1" {
			return nil
		}
		if !strings.HasPrefix(got, "-MISCONF Errors writing to the AOF file") {
			t.Fatalf("write while the log is broken: %s", got)
		}
		return fmt.Errorf("still refusing writes: %s", got)
	})
	s2 := restart(t, s, false)
	rc3 := dialRaw(t, s2.Addr())
	// "unlogged" was in doubt: the snapshot made it durable.
	if got := rc3.do("BF.MEXISTS", "b", "ok", "y", "unlogged"); got != "[:1 :1 :1]" {
		t.Errorf("after restart: %s", got)
	}
}

// Replay does not depend on when it runs: keys do not expire during replay,
// and expiries that happened live are in the log as DELs.
func TestReplayWithExpiry(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(2_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	dir := t.TempDir()
	s := startServer(t, Config{Dir: dir, AppendFsync: "always", Now: clock})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.RESERVE k 0.01 10", "+OK"},
		{"EXPIRE k 10", ":1"},
		{"BF.ADD k a", ":1"},
		{"BF.RESERVE old 0.01 10", "+OK"},
		{"EXPIRE old 5", ":1"},
	})
	advance(6 * time.Second)
	runSteps(t, rc, []step{
		{"EXISTS old", ":0"},   // expired live: a DEL goes to the log
		{"BF.ADD old x", ":1"}, // a new, default filter
	})
	s.Close()
	advance(time.Hour) // k expired while the server was down
	s2 := startServer(t, Config{Dir: dir, Now: clock})
	runSteps(t, dialRaw(t, s2.Addr()), []step{
		{"EXISTS k", ":0"},
		{"BF.INFO old CAPACITY", "[:100]"},
		{"BF.EXISTS old x", ":1"},
		{"DBSIZE", ":1"},
	})
}

// A large log triggers a background snapshot that restarts it.
func TestAutoSnapshot(t *testing.T) {
	s := startServer(t, Config{AutoSaveLogBytes: 4096})
	rc := dialRaw(t, s.Addr())
	for i := 0; i < 200; i++ {
		rc.do("BF.ADD", "b", fmt.Sprintf("item-%d-%s", i, strings.Repeat("x", 40)))
	}
	poll.Until(t, 10*time.Second, func() error {
		if n := s.aofSize(); n > 4096 {
			return fmt.Errorf("log still %d bytes", n)
		}
		return nil
	})
	s2 := restart(t, s, false)
	if got := dialRaw(t, s2.Addr()).do("BF.CARD", "b"); got != ":200" {
		t.Fatalf("after auto snapshot and restart: %s", got)
	}
}
