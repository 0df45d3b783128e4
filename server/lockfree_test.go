package server

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Deleting a large filter returns its memory off the keyspace lock: while
// the unmapping is held back, the DEL has answered and another client's
// PING and BF.EXISTS answer too. (Unmapping 1.28 GB under the lock made
// every client wait 0.3 s.)
func TestBigDeleteFreesOffTheLock(t *testing.T) {
	for _, cmd := range []string{"DEL", "UNLINK", "FLUSHALL", "RENAME", "BF.RESERVE"} {
		t.Run(cmd, func(t *testing.T) {
			entered := make(chan *entry, 1)
			release := make(chan struct{})
			old := lazyFree
			lazyFree = func(e *entry) {
				entered <- e
				<-release
				e.free()
			}
			defer func() { lazyFree = old }()
			s := startServer(t, Config{NoPersistence: true})
			rc, other := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
			runSteps(t, rc, []step{
				{"BF.RESERVE big 0.01 2000000", "+OK"}, // 2.3 MiB of arrays
				{"BF.ADD small x", ":1"},
			})
			switch cmd {
			case "RENAME":
				runSteps(t, rc, []step{{"RENAME small big", "+OK"}})
			case "BF.RESERVE":
				runSteps(t, rc, []step{{"PEXPIRE big 1", ":1"}})
				time.Sleep(5 * time.Millisecond)
				runSteps(t, rc, []step{{"BF.RESERVE big 0.01 10", "+OK"}}) // expires big first
			case "FLUSHALL":
				runSteps(t, rc, []step{{"FLUSHALL", "+OK"}})
			default:
				runSteps(t, rc, []step{{cmd + " big", ":1"}})
			}
			select {
			case e := <-entered:
				if e.dataBytes() < lazyFreeBytes {
					t.Errorf("lazy free of a %d-byte entry", e.dataBytes())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the large filter was not freed in the background")
			}
			runSteps(t, other, []step{{"PING", "+PONG"}, {"BF.EXISTS small y", ":0"}})
			close(release)
		})
	}
}

// FLUSHALL while a snapshot is being written is O(1) with the keyspace
// lock held (the snapshot goes on over the old keyspace), and the snapshot
// still holds every key of its point in time. Freezing and queueing each
// key under the lock made clients wait 15 s for 1M keys.
func TestFlushDuringSnapshotIsConstantTime(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	c := &Session{authed: true}
	n := 50000
	for i := 0; i < n; i += 1000 {
		args := []string{"MSET"}
		for j := i; j < i+1000; j++ {
			args = append(args, fmt.Sprint("k", j), "v")
		}
		doArgs(s, c, args...)
	}
	doArgs(s, c, "BF.ADD", "k0", "x") // one filter among the strings
	s.db.mu.Lock()
	snap := s.db.beginSnapshot(2)
	s.db.mu.Unlock()
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{{"FLUSHALL", "+OK"}})
	// The server's own time for it (INFO commandstats, measured with the
	// lock held), not the round trip, which a loaded machine stretches.
	info := rc.do("INFO", "commandstats")
	m := regexp.MustCompile(`cmdstat_flushall:calls=1,usec=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("no FLUSHALL in INFO commandstats: %s", info)
	}
	usec, _ := strconv.Atoi(m[1])
	took := time.Duration(usec) * time.Microsecond
	runSteps(t, rc, []step{{"DBSIZE", ":0"}, {"SET k1 new", "+OK"}})
	var buf bytes.Buffer
	if err := s.writeSnapshot(&buf, snap); err != nil {
		t.Fatal(err)
	}
	s.db.mu.Lock()
	s.db.endSnapshot(snap)
	s.db.mu.Unlock()
	s2 := startServer(t, Config{NoPersistence: true})
	if _, got, err := loadSnapshot(s2, buf.Bytes()); err != nil || got != n {
		t.Fatalf("the snapshot holds %d keys (%v), want %d", got, err, n)
	}
	c2 := &Session{authed: true}
	if got := doArgs(s2, c2, "GET", "k1"); got != "$1\r\nv\r\n" {
		t.Errorf("k1 in the snapshot: %q", got)
	}
	// O(1): far below what walking 50k keys took (≈0.35 s).
	if took > 150*time.Millisecond {
		t.Errorf("FLUSHALL with a snapshot running took %v for %d keys", took, n)
	}
}

// A BF.MERGE of large filters ORs in the background, a chunk per hold of
// the keyspace lock: while it runs, other clients are served; the merging
// client's reply waits for it; a command naming one of its keys sees the
// merge done (it finishes it first); and a restart replays the same bits.
func TestBigMergeRunsOffTheLock(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run(fmt.Sprintf("native=%v", native), func(t *testing.T) {
			chunks := make(chan struct{}, 1)
			gate := make(chan struct{})
			mergePause = func() {
				select {
				case chunks <- struct{}{}:
				default:
				}
				<-gate
			}
			defer func() { mergePause = nil }()
			s := startServer(t, Config{AppendFsync: "always"})
			rc, other := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
			reserve := "BF.RESERVE %s 0.01 8000000"
			if native {
				reserve += " LAYOUT blocked SEED 9"
			}
			for _, k := range []string{"a", "b", "d"} {
				runSteps(t, rc, []step{{fmt.Sprintf(reserve, k), "+OK"}})
			}
			runSteps(t, rc, []step{
				{"BF.MADD a x1 x2 x3", "[:1 :1 :1]"},
				{"BF.MADD b y1 y2", "[:1 :1]"},
				{"BF.ADD d z", ":1"},
				{"SET s v", "+OK"},
			})
			// 4 × 9.6 MB to OR: d (itself once), a, b, a again (merged once).
			rc.send("BF.MERGE", "d", "a", "d", "b", "a")
			select {
			case <-chunks:
			case <-time.After(10 * time.Second):
				t.Fatal("BF.MERGE did not go to the background")
			}
			rc.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, err := rc.r.Peek(1); err == nil {
				t.Fatal("BF.MERGE answered before its merge was done")
			}
			runSteps(t, other, []step{{"PING", "+PONG"}, {"GET s", `"v"`}, {"BF.EXISTS a x1", ":1"}})
			// Naming the destination finishes the merge first.
			runSteps(t, other, []step{{"BF.MEXISTS d x1 x2 x3 y1 y2 z", "[:1 :1 :1 :1 :1 :1]"}})
			close(gate)
			if got := rc.read(); got != "+OK" {
				t.Fatalf("BF.MERGE: %s", got)
			}
			before := other.do("BF.INFO", "d") + other.do("BF.CARD", "d")
			s2 := crashRestart(t, s, Config{})
			rc2 := dialRaw(t, s2.Addr())
			if after := rc2.do("BF.INFO", "d") + rc2.do("BF.CARD", "d"); after != before {
				t.Errorf("after restart %s, before %s", after, before)
			}
			runSteps(t, rc2, []step{{"BF.MEXISTS d x1 x2 x3 y1 y2 z", "[:1 :1 :1 :1 :1 :1]"}})
		})
	}
}
