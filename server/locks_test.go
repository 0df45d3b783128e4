package server

import (
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/aof"
	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// doWithin sends a command and reads its reply, giving up after d.
func doWithin(rc *rawConn, d time.Duration, args ...string) (string, error) {
	rc.send(args...)
	rc.c.SetReadDeadline(time.Now().Add(d))
	return readReply(rc.r)
}

// A BGSAVE SCHEDULE that arrives after the running rewrite finished its
// work but before it stopped counting as running is not lost: it is
// answered "scheduled" and a second rewrite runs. (The finishing
// goroutine looked at the request before it cleared its running flag, and
// started the next from another goroutine that raced the same flag.)
func TestBGSaveScheduleNotDropped(t *testing.T) {
	s := startServer(t, Config{})
	rc, other := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	scheduled := make(chan string, 1)
	var once sync.Once
	hook := func() {
		once.Do(func() { scheduled <- other.do("BGSAVE", "SCHEDULE") })
	}
	testHookRewriteDone.Store(&hook)
	defer testHookRewriteDone.Store(nil)
	before := s.persist.saves.Load()
	mustDo(t, rc, "+Background saving started", "BGSAVE")
	waitFor(t, func() bool { return s.persist.saves.Load() >= before+1 })
	waitFor(t, func() bool {
		return s.persist.saves.Load() == before+2 && !s.persist.saving.Load()
	})
	if got := <-scheduled; got != "+Background saving scheduled" {
		t.Errorf("BGSAVE SCHEDULE while a rewrite ends: %s", got)
	}
	if s.persist.scheduled.Load() {
		t.Error("aof_rewrite_scheduled still set after the scheduled rewrite ran")
	}
}

// A full sync holds the snapshot mutex (one snapshot at a time) only
// while it writes its snapshot to a file, never while it writes to the
// replica: with the replica's first write held back (a replica that does
// not read), SAVE and BGSAVE still run. (+FULLRESYNC was written with
// the mutex held.)
func TestFullSyncHoldsNoLockAcrossNetworkIO(t *testing.T) {
	s := startServer(t, Config{})
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	testHookReplicaWrite.Store(&hook)
	defer testHookReplicaWrite.Store(nil)
	defer close(release)

	rc, admin := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	mustDo(t, admin, ":1", "BF.ADD", "k", "x")
	rc.send("PSYNC", "?", "-1")
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the full sync never wrote to the replica")
	}
	for _, cmd := range [][]string{{"SAVE"}, {"BGSAVE"}} {
		got, err := doWithin(admin, 5*time.Second, cmd...)
		if err != nil {
			t.Fatalf("%v while a full sync's write to the replica is held: %v", cmd, err)
		}
		if got != "+OK" && got != "+Background saving started" {
			t.Fatalf("%v: %s", cmd, got)
		}
	}
}

// A replica receives a full sync's payload with no lock held: while the
// master's payload is held back (a master that stalls), SAVE and BGSAVE
// on the replica run. (The payload was copied from the connection into
// the new snapshot with the snapshot mutex held.)
func TestReplicaReceivesPayloadOffTheLock(t *testing.T) {
	m := startServer(t, Config{})
	mustDo(t, dialRaw(t, m.Addr()), ":1", "BF.ADD", "k", "x")
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	}
	testHookSyncPayload.Store(&hook)
	defer testHookSyncPayload.Store(nil)
	r := startReplica(t, m, Config{})
	defer close(release)
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the replica never received a payload")
	}
	rc := dialRaw(t, r.Addr())
	for _, cmd := range [][]string{{"SAVE"}, {"BGSAVE"}} {
		got, err := doWithin(rc, 5*time.Second, cmd...)
		if err != nil {
			t.Fatalf("%v on the replica while the master's payload is held back: %v", cmd, err)
		}
		if got != "+OK" && got != "+Background saving started" {
			t.Fatalf("%v: %s", cmd, got)
		}
	}
}

// infoNum reads an integer field of INFO section through rc.
func infoNum(t *testing.T, rc *rawConn, section, field string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?:^"|\\n)` + field + `:(-?\d+)\\r`).FindStringSubmatch(rc.do("INFO", section))
	if m == nil {
		t.Fatalf("INFO %s has no %s", section, field)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// A large value that leaves the keyspace (DEL, FLUSHALL, SET or RENAME
// over it, expiry) leaves used_memory at once, while it is still being
// freed off the lock; INFO memory's lazyfree_pending_objects counts it
// until then and lazyfreed_objects after, as Redis's do.
func TestLazyFreeAccounting(t *testing.T) {
	for _, cmd := range []string{"DEL", "FLUSHALL", "SET", "RENAME", "expiry"} {
		t.Run(cmd, func(t *testing.T) {
			entered := make(chan struct{}, 1)
			release := make(chan struct{})
			old := keyspace.LazyFree
			keyspace.LazyFree = func(e *keyspace.Entry) {
				entered <- struct{}{}
				<-release
				e.Free()
			}
			defer func() { keyspace.LazyFree = old }()
			s := startServer(t, Config{NoPersistence: true})
			rc, other := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
			mustDo(t, rc, "+OK", "BF.RESERVE", "big", "0.01", "2000000") // 2.3 MiB of arrays
			mustDo(t, rc, ":1", "BF.ADD", "small", "x")
			before := infoNum(t, rc, "memory", "used_memory")
			switch cmd {
			case "DEL":
				mustDo(t, rc, ":1", "DEL", "big")
			case "FLUSHALL":
				mustDo(t, rc, "+OK", "FLUSHALL")
			case "SET":
				mustDo(t, rc, "+OK", "SET", "big", "v")
			case "RENAME":
				mustDo(t, rc, "+OK", "RENAME", "small", "big")
			case "expiry":
				mustDo(t, rc, ":1", "PEXPIRE", "big", "1")
				waitFor(t, func() bool { return rc.do("EXISTS", "big") == ":0" })
			}
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the large filter was not freed in the background")
			}
			if after := infoNum(t, other, "memory", "used_memory"); before-after < int64(keyspace.LazyFreeBytes) {
				t.Errorf("used_memory %d before, %d while the filter is being freed", before, after)
			}
			if n := infoNum(t, other, "memory", "lazyfree_pending_objects"); n < 1 {
				t.Errorf("lazyfree_pending_objects = %d while the filter is being freed", n)
			}
			mustDo(t, other, "+PONG", "PING")
			close(release)
			waitFor(t, func() bool { return infoNum(t, other, "memory", "lazyfree_pending_objects") == 0 })
			if n := infoNum(t, other, "memory", "lazyfreed_objects"); n < 1 {
				t.Errorf("lazyfreed_objects = %d after the free", n)
			}
		})
	}
}

// heldWrites is a log file whose next write waits until release is
// closed (a slow disk), after saying so on entered.
type heldWrites struct {
	aof.File
	once             sync.Once
	entered, release chan struct{}
}

func (h *heldWrites) Write(p []byte) (int, error) {
	h.once.Do(func() {
		close(h.entered)
		<-h.release
	})
	return h.File.Write(p)
}

// INFO persistence, which runs with the keyspace lock held, does not
// wait for a write(2) of the append-only log: the log's size and
// generation are read without the log's I/O lock. (It took that lock, so
// a slow disk held the keyspace lock up, and with it the execution of
// every command, the replication stream's pings and the background
// tasks; replies wait for the log as they must, the lock need not.)
func TestInfoDoesNotWaitForLogWrites(t *testing.T) {
	s := startServer(t, Config{goroutinePerConn: true})
	h := &heldWrites{entered: make(chan struct{}), release: make(chan struct{})}
	h.File = s.aof.SwapFile(h)
	defer close(h.release)
	writer := dialRaw(t, s.Addr())
	writer.send("BF.ADD", "k", "x")
	select {
	case <-h.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the log was never written")
	}
	done := make(chan []string, 1)
	go func() {
		s.db.Lock()
		defer s.db.Unlock()
		done <- s.persistenceInfo()
	}()
	select {
	case lines := <-done:
		if len(lines) == 0 {
			t.Error("no INFO persistence lines")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("INFO persistence waited for the log's write(2) with the keyspace lock held")
	}
}

// heldSyncs is a log file whose fsyncs wait, once armed, until release
// is closed (a slow disk), after saying so on entered.
type heldSyncs struct {
	aof.File
	armed            atomic.Bool
	once             sync.Once
	entered, release chan struct{}
}

func (h *heldSyncs) Sync() error {
	if h.armed.Load() {
		h.once.Do(func() {
			close(h.entered)
			<-h.release
		})
	}
	return h.File.Sync()
}

// CONFIG SET appendfsync, leaving always, does not wait for the disk:
// while an fsync is held, it answers. (It fsynced the kept buffers with
// the keyspace lock held, so switching away from always on a slow disk,
// when one would, held every client up.)
func TestConfigSetAppendFsyncDoesNotWaitForTheDisk(t *testing.T) {
	s := startServer(t, Config{AppendFsync: "always", goroutinePerConn: true})
	h := &heldSyncs{entered: make(chan struct{}), release: make(chan struct{})}
	h.File = s.aof.SwapFile(h)
	defer close(h.release)
	writer, admin := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	mustDo(t, writer, ":1", "BF.ADD", "k", "x")
	h.armed.Store(true)
	writer.send("BF.ADD", "k", "y") // its reply waits for the held fsync
	select {
	case <-h.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the log was never fsynced")
	}
	if got, err := doWithin(admin, 5*time.Second, "CONFIG", "SET", "appendfsync", "everysec"); err != nil || got != "+OK" {
		t.Fatalf("CONFIG SET appendfsync everysec while an fsync is held: %q %v", got, err)
	}
}
