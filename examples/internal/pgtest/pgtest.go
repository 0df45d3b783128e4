// Package pgtest starts a throw-away PostgreSQL cluster for a test: initdb
// into a temporary directory, pg_ctl start on a free loopback port, and
// pg_ctl stop plus removal when the test ends. Nothing is shared with a
// PostgreSQL already running on the machine.
//
// When PostgreSQL's programs are missing the test is skipped with a message
// saying how to install them, unless BLOOMKIT_REQUIRE_PG=1, when it fails:
// CI sets it so that the PostgreSQL path can never be skipped silently.
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
)

// RequireEnv turns missing PostgreSQL programs from a skip into a failure.
const RequireEnv = "BLOOMKIT_REQUIRE_PG"

// binDir finds the directory of initdb and pg_ctl: on PATH, or where
// Debian's postgresql package puts them (/usr/lib/postgresql/VERSION/bin),
// newest version first.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("initdb and pg_ctl not found (on PATH or in /usr/lib/postgresql/*/bin)")
}

func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// Start starts a cluster and returns a DSN for its "postgres" database.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("pgtest: %v, and %s=1 requires it (run 'sudo make deps')", err, RequireEnv)
		}
		t.Skipf("pgtest: %v; skipping (install Debian's postgresql, e.g. 'sudo make deps'; set %s=1 to fail instead)", err, RequireEnv)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// PostgreSQL refuses to run as root: run it as the postgres user the
	// package creates.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgtest: running as root, and there is no postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) error {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	}
	data := filepath.Join(dir, "data")
	if err := run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off", port, dir)
	if err := run("pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("pgtest: %v\n%s", err, log)
	}
	t.Cleanup(func() { run("pg_ctl", "-D", data, "-m", "immediate", "stop") })
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
