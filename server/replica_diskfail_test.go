package server

import (
	"log/slog"
	"strconv"
	"strings"
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

// A replica whose full sync fails on its own side (here its disk) tries
// again after a pause that doubles each time: each try makes the master
// write a whole snapshot, and a try every second would keep it doing so
// for nothing.
func TestFailedFullSyncBacksOff(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	mc.do("BF.ADD", "k", "1")
	dir := newMemDir()
	var log configLog
	r := startServer(t, Config{dataDir: dir, replRetryMin: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	dir.arm(failRule{op: "create", n: 1, sticky: true})
	start := time.Now()
	h, p := hostPort(t, m)
	mustDo(t, dialRaw(t, r.Addr()), "+OK", "REPLICAOF", h, p)
	replWait(t, "four failed full syncs", func() bool { return strings.Count(log.String(), "retrying later") >= 4 })
	var pauses []string
	for _, l := range strings.Split(log.String(), "\n") {
		if i := strings.Index(l, "retry_in="); i >= 0 && strings.Contains(l, "full sync failed") {
			pauses = append(pauses, strings.Fields(l[i:])[0])
		}
	}
	want := []string{"retry_in=50ms", "retry_in=100ms", "retry_in=200ms", "retry_in=400ms"}
	if len(pauses) < 4 || strings.Join(pauses[:4], " ") != strings.Join(want, " ") {
		t.Fatalf("pauses after failed full syncs: %v, want %v", pauses, want)
	}
	// 50+100+200 ms of pauses for the first four tries: far fewer than
	// the master would have made at a try per 50 ms.
	n, _ := strconv.Atoi(replInfo(t, mc, "stats", "sync_full"))
	if limit := int(time.Since(start)/(50*time.Millisecond)) + 1; n >= limit {
		t.Errorf("the master made %d full syncs in %v", n, time.Since(start))
	}
}
