package server

import (
	"runtime"
	"strconv"
	"testing"
)

func forcedGCs() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumForcedGC
}

// Once a full sync has loaded the master's data, the replica collects the
// load's garbage and returns the free memory to the system (a forced
// collection), so that its resident memory is about its data's, as a
// Redis replica's is after loading, not twice that.
func TestFullSyncReturnsMemory(t *testing.T) {
	m := startServer(t, Config{NoPersistence: true})
	mc := dialRaw(t, m.Addr())
	for i := 0; i < 200; i++ {
		mc.do("SET", "k"+strconv.Itoa(i), "v")
	}
	before := forcedGCs()
	r := startReplica(t, m, Config{NoPersistence: true})
	rc := dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	if got := rc.do("DBSIZE"); got != ":200" {
		t.Fatalf("replica DBSIZE after the full sync = %s", got)
	}
	replWait(t, "a collection returning memory after the full sync", func() bool { return forcedGCs() > before })
}

// The start-up load of a data directory holding keys returns its garbage
// too.
func TestStartupLoadReturnsMemory(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, Config{Dir: dir})
	rc := dialRaw(t, s.Addr())
	for i := 0; i < 200; i++ {
		rc.do("SET", "k"+strconv.Itoa(i), "v")
	}
	s.Close()
	before := forcedGCs()
	s2 := startServer(t, Config{Dir: dir})
	rc2 := dialRaw(t, s2.Addr())
	replWait(t, "the start-up load", func() bool { return rc2.do("DBSIZE") == ":200" })
	replWait(t, "a collection returning memory after the start-up load", func() bool { return forcedGCs() > before })
}
