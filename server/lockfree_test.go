package server

import (
	"bytes"
	"fmt"
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
	start := time.Now()
	runSteps(t, rc, []step{{"FLUSHALL", "+OK"}})
	took := time.Since(start)
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
