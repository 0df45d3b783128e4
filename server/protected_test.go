package server

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// nonLoopbackIP is an address of this machine off the loopback interface,
// or nil.
func nonLoopbackIP() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP
		}
	}
	return nil
}

// firstLine dials addr and reads the first line the server sends after
// PING (or the refusal it sends unasked).
func firstLine(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte("PING\r\n"))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
	return line
}

// A server listening beyond loopback without a password refuses clients
// from other addresses with Redis's DENIED error, unless protected-mode is
// no (Config or CONFIG SET) or a password is set; loopback clients always
// get in.
func TestProtectedMode(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == nil {
		t.Skip("this machine has no non-loopback IPv4 address to connect from")
	}
	s := startServer(t, Config{NoPersistence: true, Addr: "0.0.0.0:0"})
	_, port, _ := net.SplitHostPort(s.Addr())
	outside := net.JoinHostPort(ip.String(), port)
	local := net.JoinHostPort("127.0.0.1", port)
	if got := firstLine(t, outside); got != deniedProtected {
		t.Fatalf("client from %s: %q, want the DENIED error", ip, got)
	}
	if !strings.HasPrefix(deniedProtected, "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user.") {
		t.Fatal("the refusal is not Redis's")
	}
	if got := firstLine(t, local); got != "+PONG\r\n" {
		t.Fatalf("loopback client: %q", got)
	}
	rc := dialRaw(t, local)
	if got := rc.do("CONFIG", "GET", "protected-mode"); !strings.Contains(got, `"yes"`) {
		t.Fatal(got)
	}
	if got := rc.do("CONFIG", "SET", "protected-mode", "no"); got != "+OK" {
		t.Fatal(got)
	}
	if got := firstLine(t, outside); got != "+PONG\r\n" {
		t.Fatalf("protected-mode no: %q", got)
	}
	rc.do("CONFIG", "SET", "protected-mode", "yes")
	if got := firstLine(t, outside); got != deniedProtected {
		t.Fatalf("protected-mode yes again: %q", got)
	}
	// A password lifts it: the client must AUTH instead.
	rc.do("CONFIG", "SET", "requirepass", "pw")
	if got := firstLine(t, outside); !strings.HasPrefix(got, "-NOAUTH") {
		t.Fatalf("with a password: %q", got)
	}

	// Config.ProtectedMode "no" (the flag and the config directive).
	s2 := startServer(t, Config{NoPersistence: true, Addr: "0.0.0.0:0", ProtectedMode: "no"})
	_, port2, _ := net.SplitHostPort(s2.Addr())
	if got := firstLine(t, net.JoinHostPort(ip.String(), port2)); got != "+PONG\r\n" {
		t.Fatalf("ProtectedMode no: %q", got)
	}
}
