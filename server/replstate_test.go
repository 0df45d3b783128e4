package server

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// restartable starts a server on a fixed directory and address, so that a
// test can stop it cleanly and start it again as the same server.
func restartable(t *testing.T, cfg Config) (start func() *Server) {
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Addr == "" {
		cfg.Addr = freePort(t)
	}
	return func() *Server { return startServer(t, cfg) }
}

// A replica stopped cleanly (SHUTDOWN, SIGTERM) and started again asks to
// continue where it stopped and gets only what it missed, as a Redis
// replica restarted from the RDB file it saved at shutdown does.
func TestReplicaCleanRestartContinues(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	h, p := hostPort(t, m)
	startRep := restartable(t, Config{ReplicaOf: h + " " + p})
	r := startRep()
	rc := dialRaw(t, r.Addr())
	for i := range 200 {
		mc.do("BF.ADD", "k", strconv.Itoa(i))
	}
	waitSynced(t, mc, rc)
	if err := r.Shutdown(); err != nil {
		t.Fatal(err)
	}
	mc.do("BF.ADD", "k", "while-away")
	r = startRep()
	rc = dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	if full, ok := replInfo(t, mc, "stats", "sync_full"), replInfo(t, mc, "stats", "sync_partial_ok"); full != "1" || ok != "1" {
		t.Fatalf("master: sync_full=%s sync_partial_ok=%s, want 1 and 1 (the restart continued)", full, ok)
	}
	if got := rc.do("BF.EXISTS", "k", "while-away"); got != ":1" {
		t.Fatalf("write made while the replica was down: %s", got)
	}
	if !sameData(t, m, r, mc, rc) {
		t.Fatal("replica differs after the restart")
	}
	// Read once: a later kill -9 must not find it.
	if _, err := os.Stat(filepath.Join(r.cfg.Dir, aof.ReplStateName)); !os.IsNotExist(err) {
		t.Fatalf("%s still there after start-up: %v", aof.ReplStateName, err)
	}
}

// A master stopped cleanly keeps its replication ID and offset, so that
// its replicas, stopped with it, continue after both restart.
func TestMasterCleanRestartKeepsHistory(t *testing.T) {
	startM := restartable(t, Config{})
	m := startM()
	mc := dialRaw(t, m.Addr())
	h, p := hostPort(t, m)
	startRep := restartable(t, Config{ReplicaOf: h + " " + p})
	r := startRep()
	rc := dialRaw(t, r.Addr())
	for i := range 100 {
		mc.do("BF.ADD", "k", strconv.Itoa(i))
	}
	waitSynced(t, mc, rc)
	replid := replInfo(t, mc, "replication", "master_replid")
	off := replInfo(t, mc, "replication", "master_repl_offset")
	if err := r.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m = startM()
	mc = dialRaw(t, m.Addr())
	if got, gotOff := replInfo(t, mc, "replication", "master_replid"), replInfo(t, mc, "replication", "master_repl_offset"); got != replid || gotOff != off {
		t.Fatalf("master after restart: replid %s offset %s, want %s %s", got, gotOff, replid, off)
	}
	r = startRep()
	rc = dialRaw(t, r.Addr())
	waitSynced(t, mc, rc)
	mc.do("BF.ADD", "k", "after")
	waitSynced(t, mc, rc)
	if full, ok := replInfo(t, mc, "stats", "sync_full"), replInfo(t, mc, "stats", "sync_partial_ok"); full != "0" || ok != "1" {
		t.Fatalf("restarted master: sync_full=%s sync_partial_ok=%s, want 0 and 1", full, ok)
	}
	if !sameData(t, m, r, mc, rc) {
		t.Fatal("replica differs after both restarted")
	}
}

// The file is trusted only for the data it was written beside: edited,
// damaged, or left beside a log that changed since, it is ignored (a full
// sync, never a continue from a wrong offset).
func TestReplStateForOtherDataIgnored(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(t *testing.T, dir string, m replMark)
	}{
		{"log longer than recorded", func(t *testing.T, dir string, m replMark) {
			m.logSize--
			os.WriteFile(filepath.Join(dir, aof.ReplStateName), m.encode(), 0o644)
		}},
		{"other snapshot", func(t *testing.T, dir string, m replMark) {
			m.snapshot++
			os.WriteFile(filepath.Join(dir, aof.ReplStateName), m.encode(), 0o644)
		}},
		{"damaged", func(t *testing.T, dir string, m replMark) {
			b := m.encode()
			b[len(replStateVersion)+8] ^= 1 // a digit of the replication ID
			os.WriteFile(filepath.Join(dir, aof.ReplStateName), b, 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := startServer(t, Config{})
			mc := dialRaw(t, m.Addr())
			h, p := hostPort(t, m)
			dir := t.TempDir()
			startRep := restartable(t, Config{Dir: dir, ReplicaOf: h + " " + p})
			r := startRep()
			rc := dialRaw(t, r.Addr())
			mc.do("BF.ADD", "k", "1")
			waitSynced(t, mc, rc)
			if err := r.Shutdown(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, aof.ReplStateName))
			if err != nil {
				t.Fatal(err)
			}
			mark, err := decodeReplMark(data)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(t, dir, mark)
			mc.do("BF.ADD", "k", "2")
			r = startRep()
			rc = dialRaw(t, r.Addr())
			waitSynced(t, mc, rc)
			if full := replInfo(t, mc, "stats", "sync_full"); full != "2" {
				t.Fatalf("sync_full = %s, want 2 (the file ignored)", full)
			}
			if !sameData(t, m, r, mc, rc) {
				t.Fatal("replica differs")
			}
		})
	}
}
