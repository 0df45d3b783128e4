package server

import "testing"

// replica-read-only no: a client's write on a replica applies there
// alone, as in Redis since 4.0. It is not sent on to the replica's own
// replicas and does not move its replication offset, which stays its
// master's, so that partial resyncs still line up.
func TestWritableReplica(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	r := startReplica(t, m, Config{ReplicaReadOnly: "no"})
	rc := dialRaw(t, r.Addr())
	sub := startReplica(t, r, Config{})
	sc := dialRaw(t, sub.Addr())
	mc.do("BF.ADD", "k", "1")
	waitSynced(t, mc, rc)
	waitSynced(t, rc, sc)
	before := replInfo(t, rc, "replication", "master_repl_offset")
	if got := rc.do("BF.ADD", "local", "x"); got != ":1" {
		t.Fatalf("write on a writable replica: %s", got)
	}
	if got := replInfo(t, rc, "replication", "master_repl_offset"); got != before {
		t.Fatalf("a local write moved the replica's offset from %s to %s", before, got)
	}
	mc.do("BF.ADD", "k", "2")
	waitSynced(t, mc, rc)
	waitSynced(t, rc, sc)
	if got := sc.do("EXISTS", "local"); got != ":0" {
		t.Fatalf("the local write reached the replica's replica: EXISTS = %s", got)
	}
	if got := sc.do("BF.EXISTS", "k", "2"); got != ":1" {
		t.Fatalf("the master's write did not reach the chained replica: %s", got)
	}
	if got := mc.do("EXISTS", "local"); got != ":0" {
		t.Fatalf("the local write reached the master: %s", got)
	}
}
