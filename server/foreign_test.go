package server

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestStartupForeignFiles: a data directory holding a restored Redis
// dump.rdb, a Redis appendonlydir/, stray temporary files or anything else
// bloomkit did not write starts with a warning naming each and saying what
// to do (it used to start empty without a word); bloomkit's own files
// bring none.
func TestStartupForeignFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"dump.rdb", "temp-4242.rdb", "notes.txt", "x.tmp", SnapshotName(7) + tmpMarker + "123"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "appendonlydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	s := startServer(t, Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("DBSIZE"); got != ":0" {
		t.Fatal(got)
	}
	out := logs.String()
	for _, want := range []string{
		"dump.rdb what=\"a Redis snapshot", "bloom migrate",
		"appendonlydir what=\"a Redis append-only directory",
		"temp-4242.rdb what=\"a temporary file of a Redis snapshot",
		"notes.txt what=\"a file bloomkit does not use",
		"x.tmp what=\"a stray temporary",
		"removed an unfinished snapshot",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up log lacks %q:\n%s", want, out)
		}
	}
	// A directory of bloomkit's own files alone: no warning.
	rc.do("BF.ADD", "k", "a")
	s.Close()
	for _, n := range []string{"dump.rdb", "temp-4242.rdb", "notes.txt", "x.tmp", "appendonlydir"} {
		os.RemoveAll(filepath.Join(dir, n))
	}
	logs.mu.Lock()
	logs.b.Reset()
	logs.mu.Unlock()
	s2 := startServer(t, Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if got := dialRaw(t, s2.Addr()).do("BF.EXISTS", "k", "a"); got != ":1" {
		t.Fatal(got)
	}
	if out := logs.String(); strings.Contains(out, "not bloomkit's") {
		t.Errorf("warnings for bloomkit's own files:\n%s", out)
	}
}
