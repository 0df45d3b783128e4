package server

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// A CMS.MERGE of large sketches checks them with the keyspace locked, then
// writes its counters in the background, a chunk per hold of the lock, as
// BF.MERGE ORs: while it runs, other clients are served; the merging
// client's reply waits for it; a command naming its destination sees the
// merge done; the sketch is the one a merge run at once (inside
// MULTI/EXEC) gives; and a restart replays the same sketch.
func TestBigCMSMergeRunsOffTheLock(t *testing.T) {
	chunks := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(gate) }) }
	keyspace.MergePause = func() {
		select {
		case chunks <- struct{}{}:
		default:
		}
		<-gate
	}
	s := startServer(t, Config{AppendFsync: "always"})
	t.Cleanup(func() { // before the server closes
		open()
		s.db.WaitMerges()
		keyspace.MergePause = nil
	})
	rc, other := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	// 100000 × 10 counters, 4 MB a sketch; the merge reads three.
	for _, k := range []string{"a", "b", "d", "d2", "small"} {
		runSteps(t, rc, []step{{"CMS.INITBYDIM " + k + " 100000 10", "+OK"}})
	}
	runSteps(t, rc, []step{
		{"CMS.INCRBY a x 3 y 1", "[:3 :1]"},
		{"CMS.INCRBY b x 2 z 5", "[:2 :5]"},
		{"CMS.INCRBY d w 7", "[:7]"},
		{"CMS.INCRBY d2 w 7", "[:7]"},
		{"SET s v", "+OK"},
		// The same merge at once: a transaction's commands run under
		// the lock they started with.
		{"MULTI", "+OK"},
		{"CMS.MERGE d2 3 a b d2 WEIGHTS 2 1 1", "+QUEUED"},
		{"EXEC", "[+OK]"},
	})
	select {
	case <-chunks:
		t.Fatal("CMS.MERGE inside MULTI/EXEC went to the background")
	default:
	}
	rc.send("CMS.MERGE", "d", "3", "a", "b", "d", "WEIGHTS", "2", "1", "1")
	select {
	case <-chunks:
	case <-time.After(10 * time.Second):
		t.Fatal("CMS.MERGE did not go to the background")
	}
	rc.c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := rc.r.Peek(1); err == nil {
		t.Fatal("CMS.MERGE answered before its merge was done")
	}
	runSteps(t, other, []step{{"PING", "+PONG"}, {"GET s", `"v"`}, {"CMS.QUERY small x", "[:0]"}})
	// Naming the destination finishes the merge first.
	runSteps(t, other, []step{{"CMS.QUERY d x y z w", "[:8 :2 :5 :7]"}})
	open()
	if got := rc.read(); got != "+OK" {
		t.Fatalf("CMS.MERGE: %s", got)
	}
	want := other.do("DUMP", "d2")
	if got := other.do("DUMP", "d"); got != want {
		t.Fatal("the background merge's sketch differs from the one merged at once")
	}
	runSteps(t, other, []step{{"CMS.INFO d", "[+width :100000 +depth :10 +count :22]"}})
	s2 := crashRestart(t, s, Config{})
	rc2 := dialRaw(t, s2.Addr())
	if got := rc2.do("DUMP", "d"); got != want {
		t.Error("after a restart the merged sketch differs")
	}
}

// A background CMS.MERGE in chunks that split counters (10 bytes a chunk:
// two and a half counters) writes every counter once: the sketch is the
// one a merge run at once gives.
func TestCMSMergeInOddChunks(t *testing.T) {
	var chunks atomic.Int64
	chunk, async := keyspace.MergeChunk, keyspace.MergeAsyncBytes
	keyspace.MergeChunk, keyspace.MergeAsyncBytes = 30, 0 // 30 / 3 sketches read
	keyspace.MergePause = func() { chunks.Add(1) }
	s := startServer(t, Config{NoPersistence: true})
	t.Cleanup(func() { // before the server closes
		s.db.WaitMerges()
		keyspace.MergeChunk, keyspace.MergeAsyncBytes, keyspace.MergePause = chunk, async, nil
	})
	rc := dialRaw(t, s.Addr())
	for _, k := range []string{"a", "b", "d", "d2"} {
		runSteps(t, rc, []step{{"CMS.INITBYDIM " + k + " 1000 10", "+OK"}})
	}
	for i := range 300 {
		it := strconv.Itoa(i)
		runSteps(t, rc, []step{
			{"CMS.INCRBY a i" + it + " " + strconv.Itoa(i%7+1), "[:" + strconv.Itoa(i%7+1) + "]"},
		})
		rc.do("CMS.INCRBY", "b", "j"+it, strconv.Itoa(i%5+1))
		rc.do("CMS.INCRBY", "d", "k"+it, "1")
		rc.do("CMS.INCRBY", "d2", "k"+it, "1")
	}
	runSteps(t, rc, []step{
		{"MULTI", "+OK"},
		{"CMS.MERGE d2 3 a b d2 WEIGHTS 2 1 1", "+QUEUED"},
		{"EXEC", "[+OK]"},
	})
	if n := chunks.Load(); n != 0 {
		t.Fatalf("the merge inside MULTI/EXEC ran %d chunks in the background", n)
	}
	runSteps(t, rc, []step{{"CMS.MERGE d 3 a b d WEIGHTS 2 1 1", "+OK"}})
	if n := chunks.Load(); n < 40000/10 {
		t.Fatalf("the merge ran in %d chunks, want one per 10 of its 40000 bytes", n)
	}
	if rc.do("DUMP", "d") != rc.do("DUMP", "d2") {
		t.Fatal("the merge in chunks differs from the one run at once")
	}
}
