package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/server"
)

// check-log reports a good log, a torn last record and damage before the
// end (exit 1), and --fix cuts at the first bad record so the log reads
// as good again.
func TestCheckLog(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	s, err := server.New(server.Config{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	c := &server.Session{}
	var r server.Reply
	for _, item := range []string{"a", "b", "c"} {
		s.Do(c, [][]byte{[]byte("BF.ADD"), []byte("f"), []byte(item)}, &r)
	}
	s.Close()
	path := filepath.Join(dir, server.LogName(1))
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r1 := bloomIn(t, dir, "", "check-log", path).want(t, 0, "a good log")
	if !strings.Contains(r1.stdout, "good records: 3") || !strings.Contains(r1.stdout, "the log is good") {
		t.Errorf("good log: %s", r1.stdout)
	}

	os.WriteFile(path, append(append([]byte{}, good...), 1, 2, 3), 0o644)
	r2 := bloomIn(t, dir, "", "check-log", path).want(t, 0, "a torn last record")
	if !strings.Contains(r2.stdout, "torn final record") {
		t.Errorf("torn log: %s", r2.stdout)
	}

	bad := append([]byte{}, good...)
	bad[20+1] ^= 1 // the first record's length
	os.WriteFile(path, bad, 0o644)
	r3 := bloomIn(t, dir, "", "check-log", path)
	if r3.code != 1 || !strings.Contains(r3.stdout, "DAMAGED at offset 20") {
		t.Errorf("damaged log: exit %d, %s", r3.code, r3.stdout)
	}
	r4 := bloomIn(t, dir, "", "check-log", "--fix", path).want(t, 0, "--fix")
	if !strings.Contains(r4.stdout, "fixed: cut at offset 20") {
		t.Errorf("--fix: %s", r4.stdout)
	}
	if st, _ := os.Stat(path); st == nil || st.Size() != 20 {
		t.Errorf("fixed log is %v bytes, want the 20-byte header", st.Size())
	}
	bloomIn(t, dir, "", "check-log", path).want(t, 0, "the fixed log")
	bloomIn(t, dir, "", "check-log", filepath.Join(dir, "missing.aof")).want(t, 2, "a missing file")
}
