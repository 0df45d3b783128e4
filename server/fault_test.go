package server

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
)

// faultWorkload drives a server over TCP with BF.ADD, CF.ADD + CF.DEL,
// MULTI/EXEC and rewrites (SAVE, BGREWRITEAOF) and records what was
// acknowledged. With a clock it also adds to a native window key "nw"
// (reserved by the caller) while the clock moves a minute a round, so
// that the window rotates and its BF.ADVANCE records meet the faults. Every reply must be an acknowledgement or one of the
// errors a failing disk may cause.
type faultWorkload struct {
	bf, txn      []string // acknowledged BF.ADD items of f, and of t (in EXEC)
	native       []string // acknowledged BF.ADD items of nw (alone or in EXEC)
	clock        *fakeClock
	cfDeleted    []string // items of c whose CF.ADD and CF.DEL were acknowledged
	errs         int      // error replies (MISCONF, IOERR, failed saves)
	saveFailures int
}

func (w *faultWorkload) run(t *testing.T, rc *rawConn, rounds int) {
	t.Helper()
	expectErr := func(cmd, got string) {
		t.Helper()
		for _, p := range []string{"-MISCONF Errors writing to the AOF file", "-IOERR the append-only log failed", "-EXECABORT Transaction discarded because of: MISCONF"} {
			if strings.HasPrefix(got, p) {
				w.errs++
				return
			}
		}
		t.Fatalf("%s: unexpected reply %s", cmd, got)
	}
	for i := 0; i < rounds; i++ {
		item := fmt.Sprintf("item-%d", i)
		if w.clock != nil {
			w.clock.Add(time.Minute)
		}
		switch i % 6 {
		case 0, 1, 2:
			if got := rc.do("BF.ADD", "f", item); got == ":1" || got == ":0" {
				w.bf = append(w.bf, item)
			} else {
				expectErr("BF.ADD", got)
			}
			if w.clock != nil && i%6 == 1 {
				if got := rc.do("BF.ADD", "nw", item); got == ":1" || got == ":0" {
					w.native = append(w.native, item)
				} else {
					expectErr("BF.ADD", got)
				}
			}
		case 3:
			got := rc.do("CF.ADD", "c", item)
			if got != ":1" {
				expectErr("CF.ADD", got)
				continue
			}
			if got := rc.do("CF.DEL", "c", item); got == ":1" {
				w.cfDeleted = append(w.cfDeleted, item)
			} else {
				expectErr("CF.DEL", got)
			}
		case 4:
			rc.send("MULTI")
			rc.send("BF.ADD", "t", item)
			rc.send("BF.ADD", "t", item+"-x")
			want := "[:1 :1]"
			if w.clock != nil {
				w.clock.Add(time.Minute)
				rc.send("BF.ADD", "nw", item+"-n")
				rc.read()
				want = "[:1 :1 :1]"
			}
			rc.send("EXEC")
			rc.read()
			rc.read()
			rc.read()
			if got := rc.read(); got == want {
				w.txn = append(w.txn, item, item+"-x")
				if w.clock != nil {
					w.native = append(w.native, item+"-n")
				}
			} else if strings.HasPrefix(got, "[") {
				t.Fatalf("EXEC: %s", got)
			} else {
				expectErr("EXEC", got)
			}
		case 5:
			if i%12 == 5 {
				if got := rc.do("SAVE"); got != "+OK" {
					if !strings.HasPrefix(got, "-ERR ") {
						t.Fatalf("SAVE: %s", got)
					}
					w.errs++
					w.saveFailures++
				}
				continue
			}
			if got := rc.do("BGREWRITEAOF"); got != "+Background append only file rewriting started" &&
				got != "-ERR Background append only file rewriting already in progress" {
				t.Fatalf("BGREWRITEAOF: %s", got)
			}
			waitRewrite(t, rc)
			if strings.Contains(rc.do("INFO", "persistence"), "aof_last_bgrewrite_status:err") {
				w.errs++
				w.saveFailures++
			}
		}
	}
}

// waitRewrite waits until no rewrite is running.
func waitRewrite(t *testing.T, rc *rawConn) {
	t.Helper()
	poll.True(t, 10*time.Second, "the rewrite to finish", func() bool {
		return !strings.Contains(rc.do("INFO", "persistence"), "aof_rewrite_in_progress:1")
	})
}

// verify checks that every acknowledged write survived.
func (w *faultWorkload) verify(t *testing.T, rc *rawConn) {
	t.Helper()
	check := func(key string, items []string, want string) {
		for _, it := range items {
			if got := rc.do("BF.EXISTS", key, it); got != want {
				t.Errorf("acknowledged BF.ADD %s %s: BF.EXISTS %s after the crash", key, it, got)
			}
		}
	}
	check("f", w.bf, ":1")
	check("t", w.txn, ":1")
	check("nw", w.native, ":1")
	for _, it := range w.cfDeleted {
		if got := rc.do("CF.EXISTS", "c", it); got != ":0" {
			t.Errorf("acknowledged CF.DEL c %s undone by the crash: CF.EXISTS %s", it, got)
		}
	}
}

// Every file operation persistence uses fails at its Nth call (once, or
// from then on as on a full disk), with appendfsync always; the machine
// then loses power. After a restart every acknowledged write is there,
// every failure was reported rather than acknowledged, and a transient
// failure heals by itself.
func TestFaultInjection(t *testing.T) {
	for _, op := range []string{"create", "write", "fsync", "rename", "dirsync"} {
		for n := 1; n <= 8; n++ {
			for _, sticky := range []bool{false, true} {
				name := fmt.Sprintf("%s/%d", op, n)
				if sticky {
					name += "/sticky"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					faultRun(t, failRule{op: op, n: n, sticky: sticky}, "always", false)
				})
			}
		}
	}
}

// The same with appendfsync everysec and a killed process instead of a
// power cut: what was written survives in the kernel, so nothing
// acknowledged may be lost either.
func TestFaultInjectionProcessCrash(t *testing.T) {
	for _, op := range []string{"create", "write", "fsync", "rename", "dirsync"} {
		for n := 1; n <= 6; n++ {
			t.Run(fmt.Sprintf("%s/%d", op, n), func(t *testing.T) {
				t.Parallel()
				faultRun(t, failRule{op: op, n: n}, "everysec", true)
			})
		}
	}
}

func faultRun(t *testing.T, rule failRule, fsync string, processCrash bool) {
	dir := newMemDir()
	clock := newFakeClock(time.Unix(1_800_000_000, 0))
	cfg := Config{dataDir: dir, AppendFsync: fsync, retryMin: 5 * time.Millisecond, AutoSaveLogBytes: -1, Logger: quietLogger(), Now: clock.Now}
	s := startServer(t, cfg)
	rc := dialRaw(t, s.Addr())
	// A window of 4 generations of 15 min: the 36 rounds (one minute
	// each, two in a transaction) rotate it 3 times, and keep every item.
	if got := rc.do("BF.RESERVE", "nw", "0.01", "1000", "WINDOW", "1h", "SEED", "7"); got != "+OK" {
		t.Fatalf("BF.RESERVE nw: %s", got)
	}
	dir.arm(rule)
	w := faultWorkload{clock: clock}
	w.run(t, rc, 36)
	fired := dir.firedCount()
	if fired > 0 && w.errs == 0 {
		t.Errorf("the fault fired %d times but no client was told", fired)
	}
	if !rule.sticky {
		// A one-off failure heals: the background rewrite makes the log
		// writable again.
		poll.Until(t, 5*time.Second, func() error {
			if got := rc.do("BF.ADD", "f", "final"); got != ":1" && got != ":0" {
				return fmt.Errorf("no recovery after a one-off %s failure: %s", rule.op, got)
			}
			return nil
		})
		w.bf = append(w.bf, "final")
	}
	var img *memDir
	if processCrash {
		img = dir.processCrash()
	} else {
		img = dir.crash()
	}
	s2, err := New(Config{dataDir: img, Addr: "127.0.0.1:0", Logger: quietLogger(), Now: clock.Now})
	if err != nil {
		t.Fatalf("restart after the crash: %v (files %v)", err, img.files())
	}
	if err := s2.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); s2.Serve() }()
	defer func() { s2.Close(); <-done }()
	w.verify(t, dialRaw(t, s2.Addr()))
	if t.Failed() {
		t.Logf("fault fired %d times; %d errors reported; files after the crash %v", fired, w.errs, img.files())
	}
}

// A reader does not see a write before the write is durable (appendfsync
// always): its reply waits for the writer's fsync, and if that fsync
// fails neither the writer nor the reader is told the write happened, nor
// is any later reader until a snapshot makes it durable.
func TestNoDirtyReads(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fsync fails=%v", fail), func(t *testing.T) {
			dir := newMemDir()
			s := startServer(t, Config{dataDir: dir, AppendFsync: "always", retryMin: time.Hour, Logger: quietLogger()})
			a, b := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
			if got := a.do("BF.ADD", "k", "before"); got != ":1" {
				t.Fatal(got)
			}
			gate, entered := make(chan error), make(chan struct{}, 4)
			release := sync.OnceFunc(func() { close(gate) }) // later fsyncs pass
			t.Cleanup(release)                               // also when the test fails early
			dir.mu.Lock()
			dir.gate, dir.entered = gate, entered
			dir.mu.Unlock()
			// Hold off the snapshot that would heal the log at once.
			s.persist.saveMu.Lock()
			defer s.persist.saveMu.Unlock()
			a.send("BF.ADD", "k", "x")
			<-entered // the writer's fsync is under way
			b.send("BF.EXISTS", "k", "x")
			b.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if line, err := b.r.ReadString('\n'); err == nil {
				t.Fatalf("the reader was answered %q before the write was durable", line)
			}
			dir.mu.Lock()
			dir.gate, dir.entered = nil, nil
			dir.mu.Unlock()
			var e error
			if fail {
				e = syscall.EIO
			}
			gate <- e
			release()
			gotA, gotB := a.read(), b.read()
			if !fail {
				if gotA != ":1" || gotB != ":1" {
					t.Fatalf("after the fsync: writer %s, reader %s", gotA, gotB)
				}
				return
			}
			if !strings.HasPrefix(gotA, "-IOERR") || !strings.HasPrefix(gotB, "-IOERR") {
				t.Fatalf("after a failed fsync: writer %s, reader %s (both must be errors)", gotA, gotB)
			}
			c := dialRaw(t, s.Addr())
			if got := c.do("BF.EXISTS", "k", "x"); !strings.HasPrefix(got, "-IOERR") {
				t.Errorf("a later reader of the key in doubt: %s", got)
			}
			if got := c.do("BF.ADD", "other", "y"); !strings.HasPrefix(got, "-MISCONF") {
				t.Errorf("a write after the failure: %s", got)
			}
			if got := c.do("BF.EXISTS", "other", "y"); got != ":0" {
				t.Errorf("a read of another key: %s", got)
			}
		})
	}
}

// An operator's scenario on a real file system: a data directory
// on a tiny tmpfs runs out of inodes, BGSAVE fails, writes go on being
// acknowledged (the old log still has room), the process is killed, space
// is freed, and after a restart every acknowledged write is there. Then
// the disk fills up: writes are refused with MISCONF instead of being
// acknowledged, and after space is freed the server heals by itself.
func TestTmpfsFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,nr_inodes=16", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "data")
	bin := bloomBinary(t)
	addr := freePort(t)
	srv := startBinary(t, bin, dir, addr, "--appendfsync", "always")
	rc := dialRaw(t, addr)
	if got := rc.do("BF.ADD", "f", "before"); got != ":1" {
		t.Fatal(got)
	}
	// Use up the inodes.
	var fillers []string
	for i := 0; ; i++ {
		p := filepath.Join(mnt, fmt.Sprintf("filler-%d", i))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			break
		}
		fillers = append(fillers, p)
	}
	if got := rc.do("BGSAVE"); got != "+Background saving started" {
		t.Fatal(got)
	}
	waitRewrite(t, rc)
	if info := rc.do("INFO", "persistence"); !strings.Contains(info, "rdb_last_bgsave_status:err") {
		t.Fatalf("BGSAVE without inodes did not fail: %s", info)
	}
	for _, it := range []string{"after1", "after2", "after3"} {
		if got := rc.do("BF.ADD", "f", it); got != ":1" {
			t.Fatalf("BF.ADD %s after the failed BGSAVE: %s", it, got)
		}
	}
	srv.Process.Kill()
	srv.Wait()
	for _, p := range fillers {
		os.Remove(p)
	}
	addr2 := freePort(t)
	srv2 := startBinary(t, bin, dir, addr2, "--appendfsync", "always")
	rc2 := dialRaw(t, addr2)
	if got := rc2.do("BF.MEXISTS", "f", "before", "after1", "after2", "after3"); got != "[:1 :1 :1 :1]" {
		t.Fatalf("acknowledged writes after the failed BGSAVE lost: %s", got)
	}

	// Now fill the space: the log's writes fail.
	big := filepath.Join(mnt, "big")
	os.WriteFile(big, make([]byte, 8<<20), 0o644) // fails part way: the disk is full
	acked := []string{}
	sawMisconf := false
	for i := 0; i < 2000 && !sawMisconf; i++ {
		it := fmt.Sprintf("full-%d-%s", i, strings.Repeat("x", 200))
		switch got := rc2.do("BF.ADD", "f", it); {
		case got == ":1" || got == ":0":
			acked = append(acked, it)
		case strings.HasPrefix(got, "-MISCONF"):
			sawMisconf = true
		case strings.HasPrefix(got, "-IOERR"):
		default:
			t.Fatalf("BF.ADD on a full disk: %s", got)
		}
	}
	if !sawMisconf {
		t.Fatal("a full disk never turned into MISCONF")
	}
	if info := rc2.do("INFO", "persistence"); !strings.Contains(info, "aof_last_write_status:err") {
		t.Errorf("INFO does not show the failed log: %s", info)
	}
	os.Remove(big)
	poll.Until(t, 20*time.Second, func() error {
		if got := rc2.do("BF.ADD", "f", "healed"); got != ":1" {
			return fmt.Errorf("the server did not heal after space was freed: %s", got)
		}
		return nil
	})
	acked = append(acked, "healed")
	addr3 := freePort(t)
	srv2.Process.Kill() // kill -9 and restart once more
	srv2.Wait()
	startBinary(t, bin, dir, addr3, "--appendfsync", "always")
	rc3 := dialRaw(t, addr3)
	for _, it := range acked {
		if got := rc3.do("BF.EXISTS", "f", it); got != ":1" {
			t.Fatalf("acknowledged %q lost: %s", it[:12], got)
		}
	}
}
