package server

import (
	"net"
	"os/exec"
	"strings"
	"testing"
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
