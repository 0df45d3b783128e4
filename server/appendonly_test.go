package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
)

// TestAppendOnlyNoKeepsSnapshots: "appendonly no" in a config file means
// what it means to Redis: no log, but SAVE, BGSAVE, the save points and
// the shutdown save write snapshots, and start-up loads them. It used to
// turn persistence off entirely: SAVE answered OK, nothing was written, the
// restart was empty.
func TestAppendOnlyNoKeepsSnapshots(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "bloomkit.conf")
	os.WriteFile(file, []byte("appendonly no\ndir "+dir+"\n"), 0o600)
	start := func() (*Server, *rawConn) {
		var cfg Config
		if err := ReadConfigFile(file, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg.Addr = "127.0.0.1:0"
		s := startServer(t, cfg)
		return s, dialRaw(t, s.Addr())
	}
	s, rc := start()
	if got := rc.do("CONFIG", "GET", "appendonly"); got != `["appendonly" "no"]` {
		t.Fatal(got)
	}
	rc.do("BF.ADD", "saved", "a")
	if got := rc.do("SAVE"); got != "+OK" {
		t.Fatal(got)
	}
	rc.do("BF.ADD", "bg", "b")
	before := rc.do("LASTSAVE")
	if got := rc.do("BGSAVE"); !strings.HasPrefix(got, "+Background saving started") {
		t.Fatal(got)
	}
	waitFor(t, func() bool {
		return rc.do("LASTSAVE") != before || !s.persist.saving.Load() && s.persist.gen.Load() > 1
	})
	rc.do("BF.ADD", "lost", "c") // no log: a crash loses it, as with Redis
	s.Close()                    // a crash: no shutdown save
	logs, _ := filepath.Glob(filepath.Join(dir, "appendonly.*.aof"))
	for _, l := range logs {
		if sc, _ := CheckLog(l, false); sc.Records != 0 {
			t.Fatalf("%s holds %d records with appendonly no", l, sc.Records)
		}
	}
	s, rc = start()
	for k, want := range map[string]string{"saved": ":1", "bg": ":1", "lost": ":0"} {
		if got := rc.do("EXISTS", k); got != want {
			t.Errorf("after restart EXISTS %s = %s, want %s", k, got, want)
		}
	}
	// The shutdown save.
	rc.do("BF.ADD", "atshutdown", "d")
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	// A save point: one change, and the last save an hour ago.
	s, rc = start()
	if got := rc.do("EXISTS", "atshutdown"); got != ":1" {
		t.Fatalf("after the shutdown save: %s", got)
	}
	rc.do("BF.ADD", "savepoint", "e")
	gen := s.persist.gen.Load()
	s.persist.lastSave.Store(time.Now().Unix() - 3601)
	waitFor(t, func() bool { return s.persist.gen.Load() > gen })
	s.Close()
	_, rc = start()
	if got := rc.do("EXISTS", "savepoint"); got != ":1" {
		t.Fatalf("after the save point's snapshot: %s", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.True(t, 20*time.Second, "the condition", cond)
}
