package server

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// redis-cli (Debian's redis-tools) against the server: the README's
// "redis-cli -p 6479 BF.ADD urls https://a.example" answers 1.
func TestRedisCLI(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	s := startServer(t, Config{NoPersistence: true})
	host, port, _ := net.SplitHostPort(s.Addr())
	run := func(args ...string) string {
		t.Helper()
		full := append([]string{"-h", host, "-p", port}, args...)
		out, err := exec.Command(cli, full...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimRight(string(out), "\n")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"BF.ADD", "urls", "https://a.example"}, "1"},
		{[]string{"BF.ADD", "urls", "https://a.example"}, "0"},
		{[]string{"BF.EXISTS", "urls", "https://a.example"}, "1"},
		{[]string{"BF.MEXISTS", "urls", "https://a.example", "https://b.example"}, "1\n0"},
		{[]string{"BF.INFO", "urls"}, "Capacity\n100\nSize\n240\nNumber of filters\n1\nNumber of items inserted\n1\nExpansion rate\n2"},
		{[]string{"--no-raw", "BF.INFO", "urls", "CAPACITY"}, "1) (integer) 100"},
		{[]string{"-3", "--no-raw", "BF.EXISTS", "urls", "https://a.example"}, "(true)"},
		{[]string{"-3", "--no-raw", "CF.INSERTNX", "cf", "ITEMS", "a", "a"}, "1) (integer) 1\n2) (integer) 0"},
		{[]string{"--no-raw", "BF.ADD", "nsf"}, "(error) ERR wrong number of arguments for 'bf.add' command"},
		{[]string{"--no-raw", "CF.DEL", "missing", "x"}, "(error) Not found"},
		{[]string{"TYPE", "cf"}, "MBbloomCF"},
		{[]string{"--scan", "--pattern", "u*"}, "urls"},
		{[]string{"PING"}, "PONG"},
		{[]string{"DBSIZE"}, "2"},
	} {
		if got := run(c.args...); got != c.want {
			t.Errorf("redis-cli %v\n got %q\nwant %q", c.args, got, c.want)
		}
	}
	// Interactive-style session through stdin (redis-cli sends COMMAND DOCS first).
	cmd := exec.Command(cli, "-h", host, "-p", port)
	cmd.Stdin = strings.NewReader("BF.ADD piped x\nBF.CARD piped\n")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1\n1" {
		t.Errorf("piped session: %v %q", err, out)
	}
}

// redis-cli with bloomkit's own filters: README's "seen in the last 24
// hours" example, answered as it says, the window forgetting on the
// server's clock, and the native options' errors as redis-cli shows them.
func TestRedisCLINative(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	t0 := time.Unix(1_800_000_000, 0)
	clock := newFakeClock(t0)
	s := startServer(t, Config{NoPersistence: true, Now: clock.Now})
	host, port, _ := net.SplitHostPort(s.Addr())
	run := func(args ...string) string {
		t.Helper()
		full := append([]string{"-h", host, "-p", port, "--no-raw"}, args...)
		out, err := exec.Command(cli, full...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimRight(string(out), "\n")
	}
	steps := []struct {
		advance time.Duration
		args    string
		want    string
	}{
		{0, "BF.RESERVE seen 0.01 1000000 WINDOW 24h", "OK"},
		{0, "BF.ADD seen user42:item7", "(integer) 1"},
		{0, "BF.EXISTS seen user42:item7", "(integer) 1"},
		{24 * time.Hour, "BF.EXISTS seen user42:item7", "(integer) 1"},
		{6 * time.Hour, "BF.EXISTS seen user42:item7", "(integer) 0"},
		{0, "BF.ADD seen user42:item7", "(integer) 1"},
		{0, "BF.INFO seen window", "1) (integer) 86400000"},
		{0, "BF.INFO seen generations", "1) (integer) 4"},
		{0, "BF.CARD seen", "(integer) 1"},
		{0, "TYPE seen", "BKbloom--"},
		{0, "BF.RESERVE urls 0.001 10000 LAYOUT blocked SEED 7", "OK"},
		{0, "BF.MADD urls a b", "1) (integer) 1\n2) (integer) 1"},
		{0, "BF.RESERVE urls2 0.001 10000 LAYOUT blocked SEED 7", "OK"},
		{0, "BF.MERGE urls2 urls", "OK"},
		{0, "BF.MEXISTS urls2 a b c", "1) (integer) 1\n2) (integer) 1\n3) (integer) 0"},
		{0, "BF.INFO urls layout", "1) \"blocked\""},
		{0, "BF.INFO urls seed", "1) \"7\""},
		{0, "BF.RESERVE x 0.01 100 LAYOUT blocked EXPANSION 2", "(error) ERR LAYOUT and WINDOW filters do not grow: EXPANSION is not allowed"},
		{0, "CF.ADD urls a", "(error) WRONGTYPE Operation against a key holding the wrong kind of value"},
	}
	for _, st := range steps {
		clock.Add(st.advance)
		if got := run(strings.Fields(st.args)...); got != st.want {
			t.Errorf("redis-cli %s (after +%v)\n got %q\nwant %q", st.args, st.advance, got, st.want)
		}
	}
}

// unixsocket as Redis: redis-cli -s reaches the server over the socket,
// with the permissions unixsocketperm gives; protected mode lets such a
// client in (it is on this machine); CLIENT LIST names the socket; a
// socket left by an earlier run is replaced, anything else at the path
// refused; Close removes the socket.
func TestUnixSocket(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	dir := t.TempDir()
	sock := filepath.Join(dir, "bloom.sock")
	// A socket left behind by a killed server.
	old, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	old.Close()
	s := startServer(t, Config{NoPersistence: true, UnixSocket: sock, UnixSocketPerm: 0o700, RequirePass: ""})
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket %v: %v", fi, err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-s", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli -s %v: %v\n%s", args, err, out)
		}
		return strings.TrimRight(string(out), "\n")
	}
	if got := run("BF.ADD", "k", "x"); got != "1" {
		t.Fatalf("BF.ADD over the socket: %q", got)
	}
	if got := run("CLIENT", "LIST"); !strings.Contains(got, "addr="+sock+":0") {
		t.Fatalf("CLIENT LIST over the socket: %q", got)
	}
	if got := run("CONFIG", "GET", "unixsocket*"); !strings.Contains(got, sock) || !strings.Contains(got, "700") {
		t.Fatalf("CONFIG GET unixsocket*: %q", got)
	}
	s.Close()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket is still there after Close: %v", err)
	}
	// A regular file at the path is never removed.
	if err := os.WriteFile(sock, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := New(Config{NoPersistence: true, Addr: "127.0.0.1:0", UnixSocket: sock, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if err := s2.Listen(); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: %v", err)
	}
	if b, _ := os.ReadFile(sock); string(b) != "data" {
		t.Fatal("the file at the socket's path was changed")
	}
}
