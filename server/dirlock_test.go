package server

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDirLockSecondServer: a second server on a directory another one
// serves is refused at once, naming the directory and the holder's PID;
// the first keeps its log and every acknowledged write survives. (Before,
// the second replayed the first's log, and its shutdown save removed the
// live log: writes acknowledged afterwards were lost.)
func TestDirLockSecondServer(t *testing.T) {
	dir := t.TempDir()
	a := startServer(t, Config{Dir: dir})
	rc := dialRaw(t, a.Addr())
	if got := rc.do("BF.ADD", "k", "a"); got != ":1" {
		t.Fatal(got)
	}
	_, err := New(Config{Dir: dir, Addr: "127.0.0.1:0", Logger: quietLogger()})
	if err == nil {
		t.Fatal("a second server started on a directory in use")
	}
	abs, _ := filepath.Abs(dir)
	if !errors.Is(err, ErrDirLocked) || !strings.Contains(err.Error(), abs) ||
		!strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("error %q does not name the directory and the holder's PID", err)
	}
	if got := rc.do("BF.ADD", "k2", "b"); got != ":1" {
		t.Fatal(got)
	}
	a.Close() // no snapshot: the log alone must hold both writes
	b := startServer(t, Config{Dir: dir})
	rb := dialRaw(t, b.Addr())
	if got := rb.do("BF.EXISTS", "k", "a"); got != ":1" {
		t.Fatalf("k a after restart: %s", got)
	}
	if got := rb.do("BF.EXISTS", "k2", "b"); got != ":1" {
		t.Fatalf("k2 b after restart: %s", got)
	}
}

// TestDirLockCheckLogFix: check-log --fix refuses to cut a log while a
// server holds its directory.
func TestDirLockCheckLogFix(t *testing.T) {
	dir := t.TempDir()
	a := startServer(t, Config{Dir: dir})
	rc := dialRaw(t, a.Addr())
	rc.do("BF.ADD", "k", "a")
	var log string
	names, _ := os.ReadDir(dir)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), logPrefix) {
			log = filepath.Join(dir, n.Name())
		}
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("*9\r\n$3\r\nfoo")) // a torn tail for --fix to cut
	f.Close()
	before, _ := os.Stat(log)
	if _, err := CheckLog(log, true); !errors.Is(err, ErrDirLocked) {
		t.Fatalf("check-log --fix while the server runs: %v", err)
	}
	if after, _ := os.Stat(log); after.Size() != before.Size() {
		t.Fatalf("the log was cut from %d to %d bytes under a running server", before.Size(), after.Size())
	}
	a.Close()
	res, err := CheckLog(log, true)
	if err != nil || !res.Fixed {
		t.Fatalf("check-log --fix after the server stopped: %+v %v", res, err)
	}
}
