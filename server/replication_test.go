package server

import (
	"bytes"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
)

// keyspaceImage is every key of s, with its expiry, header and arrays, as
// a snapshot writes them (in scan order): two servers hold the same data
// exactly when their images are equal.
func keyspaceImage(t testing.TB, s *Server) []byte {
	t.Helper()
	s.persist.saveMu.Lock()
	defer s.persist.saveMu.Unlock()
	s.db.WaitMerges()
	s.db.Lock()
	s.db.FinishMerges(nil)
	snap := s.db.BeginSnapshot(1)
	s.db.Unlock()
	var b bytes.Buffer
	err := s.db.WriteSnapshot(&b, snap)
	s.db.Lock()
	s.db.EndSnapshot(snap)
	s.db.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// replInfo reads one field of INFO section.
func replInfo(t testing.TB, rc *rawConn, section, field string) string {
	t.Helper()
	info := rc.do("INFO", section)
	for _, l := range strings.Split(strings.Trim(info, `"`), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	// readReply renders \r\n inside a bulk string literally.
	for _, l := range strings.Split(info, `\r\n`) {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	return ""
}

// sameData reports whether master and replica hold byte-identical
// keyspaces at the same offset: both images are taken while the offsets
// are equal and unchanged (the master's active expiry may move it on).
func sameData(t testing.TB, m, r *Server, mc, rc *rawConn) bool {
	t.Helper()
	for i := 0; i < 50; i++ {
		waitSynced(t, mc, rc)
		off := replInfo(t, mc, "replication", "master_repl_offset")
		mi, ri := keyspaceImage(t, m), keyspaceImage(t, r)
		if replInfo(t, mc, "replication", "master_repl_offset") != off || replInfo(t, rc, "replication", "master_repl_offset") != off {
			continue
		}
		if !bytes.Equal(mi, ri) {
			t.Logf("at offset %s: master %d keys %d bytes, replica %d keys %d bytes", off, m.db.Len(), len(mi), r.db.Len(), len(ri))
			return false
		}
		return true
	}
	t.Fatal("the master's offset kept moving")
	return false
}

func hostPort(t testing.TB, s *Server) (string, string) {
	i := strings.LastIndexByte(s.Addr(), ':')
	return s.Addr()[:i], s.Addr()[i+1:]
}

// replWait polls cond until it holds, or fails the test after 10 s.
func replWait(t testing.TB, what string, cond func() bool) {
	t.Helper()
	poll.True(t, 10*time.Second, what, cond)
}

// waitSynced waits until the replica's offset is the master's.
func waitSynced(t testing.TB, m, r *rawConn) {
	t.Helper()
	replWait(t, "the replica to catch up", func() bool {
		mo := replInfo(t, m, "replication", "master_repl_offset")
		ro := replInfo(t, r, "replication", "master_repl_offset")
		return mo != "" && mo == ro && replInfo(t, r, "replication", "master_link_status") == "up"
	})
}

func startReplica(t testing.TB, master *Server, cfg Config) *Server {
	h, p := hostPort(t, master)
	cfg.ReplicaOf = h + " " + p
	return startServer(t, cfg)
}

// A replica started with --replicaof gets the master's data by a full
// sync, then its writes by the stream; ROLE, INFO replication and WAIT
// see it; its keys are byte for byte the master's; clients' writes on it
// are refused.
func TestReplicationFullSyncAndStream(t *testing.T) { bothPaths(t, testReplicationFullSyncAndStream) }

func testReplicationFullSyncAndStream(t *testing.T, goroutinePerConn bool) {
	m := startServer(t, Config{goroutinePerConn: goroutinePerConn})
	mc := dialRaw(t, m.Addr())
	for i := 0; i < 50; i++ {
		mc.do("BF.ADD", "before", strconv.Itoa(i))
	}
	mc.do("CF.ADD", "cf", "x")
	mc.do("SET", "str", "v")
	r := startReplica(t, m, Config{goroutinePerConn: goroutinePerConn})
	rc := dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	if got := rc.do("BF.EXISTS", "before", "7"); got != ":1" {
		t.Fatalf("replica after full sync: BF.EXISTS = %s", got)
	}
	mc.do("BF.ADD", "after", "a")
	mc.do("MULTI")
	mc.do("BF.ADD", "after", "b")
	mc.do("SET", "str", "w")
	mc.do("EXEC")
	if got := mc.do("WAIT", "1", "5000"); got != ":1" {
		t.Fatalf("WAIT 1 = %s", got)
	}
	if got := rc.do("BF.EXISTS", "after", "b"); got != ":1" {
		t.Fatalf("replica after the stream: BF.EXISTS = %s", got)
	}
	if got := rc.do("GET", "str"); got != `"w"` {
		t.Fatalf("replica GET str = %s", got)
	}
	if got := rc.do("BF.ADD", "after", "c"); got != "-READONLY You can't write against a read only replica." {
		t.Fatalf("write on replica: %s", got)
	}
	role := mc.do("ROLE")
	if !strings.HasPrefix(role, "[\"master\" :") || !strings.Contains(role, `"`+strings.Split(r.Addr(), ":")[1]+`"`) {
		t.Fatalf("master ROLE = %s", role)
	}
	_, mport := hostPort(t, m)
	if got := rc.do("ROLE"); !strings.HasPrefix(got, `["slave" "127.0.0.1" :`+mport+` "connected" :`) {
		t.Fatalf("replica ROLE = %s", got)
	}
	if got := replInfo(t, mc, "replication", "connected_slaves"); got != "1" {
		t.Fatalf("connected_slaves = %q", got)
	}
	if got := replInfo(t, mc, "replication", "slave0"); !strings.Contains(got, "state=online") {
		t.Fatalf("slave0 = %q", got)
	}
	if got := replInfo(t, rc, "replication", "role"); got != "slave" {
		t.Fatalf("replica role = %q", got)
	}
	if got := replInfo(t, mc, "stats", "sync_full"); got != "1" {
		t.Fatalf("sync_full = %q", got)
	}
	if !sameData(t, m, r, mc, rc) {
		t.Fatal("replica's keyspace differs from the master's")
	}
}

// A random mix of writes (windows, expiries, merges, FLUSHALL, MULTI)
// leaves the replica byte-identical to the master at the same offset.
func TestReplicationIdenticalAfterRandomWrites(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	r := startReplica(t, m, Config{})
	rc := dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	rng := rand.New(rand.NewSource(1))
	n := 400
	if longForm() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		k := "k" + strconv.Itoa(rng.Intn(8))
		item := strconv.Itoa(rng.Intn(1000))
		switch rng.Intn(14) {
		case 0:
			mc.do("BF.RESERVE", k, "0.01", "1000")
		case 1, 2, 3:
			mc.do("BF.ADD", k, item)
		case 4:
			mc.do("BF.MADD", k, item, item+"x", item+"y")
		case 5:
			mc.do("CF.ADD", "c"+k, item)
		case 6:
			mc.do("PEXPIRE", k, strconv.Itoa(1+rng.Intn(30)))
		case 7:
			mc.do("DEL", k)
		case 8:
			mc.do("BF.MERGE", "m", k, "k"+strconv.Itoa(rng.Intn(8)))
		case 9:
			mc.do("MULTI")
			mc.do("BF.ADD", k, item)
			mc.do("SET", "s"+k, item)
			mc.do("EXEC")
		case 10:
			if rng.Intn(20) == 0 {
				mc.do("FLUSHALL")
			}
		case 11:
			mc.do("BF.RESERVE", "w"+k, "0.01", "1000", "WINDOW", "1")
			mc.do("BF.ADD", "w"+k, item)
		case 12:
			mc.do("BF.ADD", "w"+k, item)
		case 13:
			time.Sleep(time.Millisecond)
		}
	}
	time.Sleep(40 * time.Millisecond) // let some keys expire on the master
	mc.do("BF.EXISTS", "k1", "1")
	if !sameData(t, m, r, mc, rc) {
		t.Fatal("replica's keyspace differs from the master's")
	}
}

var _ = fmt.Sprint
