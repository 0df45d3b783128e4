package server

import (
	"testing"
	"time"
)

// A replica whose log cannot be written does not acknowledge what it
// applied: WAIT on the master does not count it, so a write confirmed by
// WAIT is on a replica's disk. Once a snapshot replaces the failed log,
// it acknowledges again (and, as on any server, the writes it could not
// log are not shown to its readers until then).
func TestReplicaDiskFailureStopsAcks(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	dir := newMemDir()
	r := startReplica(t, m, Config{dataDir: dir, AppendFsync: "always", retryMin: time.Hour, Logger: quietLogger()})
	rc := dialRaw(t, r.Addr())
	mc.do("BF.ADD", "k", "1")
	waitSynced(t, mc, rc)
	if got := mc.do("WAIT", "1", "2000"); got != ":1" {
		t.Fatalf("WAIT with a healthy replica: %s", got)
	}
	dir.arm(failRule{op: "write", n: 1, sticky: true})
	mc.do("BF.ADD", "k", "2")
	if got := mc.do("WAIT", "1", "1500"); got != ":0" {
		t.Fatalf("WAIT after the replica's disk failed: %s, want :0 (the write is not on its disk)", got)
	}
	dir.arm(failRule{})
	if got := rc.do("BGREWRITEAOF"); got != "+Background append only file rewriting started" {
		t.Fatalf("BGREWRITEAOF: %s", got)
	}
	replWait(t, "acknowledgements after the log is whole again", func() bool { return mc.do("WAIT", "1", "200") == ":1" })
	if got := rc.do("BF.EXISTS", "k", "2"); got != ":1" {
		t.Fatalf("the write applied while the log was failing: %s", got)
	}
}
