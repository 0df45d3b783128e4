package server

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
)

// expectClosed checks that the server closed the connection.
func expectClosed(t *testing.T, rc *rawConn) {
	t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	// EOF, or a reset when unread request bytes were left behind.
	if b, err := rc.r.ReadByte(); err != io.EOF && (err == nil || !strings.Contains(err.Error(), "connection reset")) {
		t.Fatalf("connection still open (read %q, %v)", b, err)
	}
}

// Before AUTH a client gets Redis's tiny limits: at most 10 arguments and
// 16 KiB per argument, whatever the parsing path.
func TestPreAuthLimits(t *testing.T) { bothPaths(t, testPreAuthLimits) }

func testPreAuthLimits(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, RequirePass: "pw", goroutinePerConn: gpc})
	rc := dialRaw(t, s.Addr())
	args := []string{"AUTH"}
	for i := 0; i < 11; i++ {
		args = append(args, "x")
	}
	if got := rc.do(args...); got != "-ERR Protocol error: unauthenticated multibulk length" {
		t.Errorf("11 arguments before AUTH: %s", got)
	}
	expectClosed(t, rc)

	rc = dialRaw(t, s.Addr())
	if got := rc.do("AUTH", strings.Repeat("x", 16<<10+1)); got != "-ERR Protocol error: unauthenticated bulk length" {
		t.Errorf("a 16 KiB + 1 argument before AUTH: %s", got)
	}
	expectClosed(t, rc)

	// The "$ inline" trick that got past the old scanner: to Redis (and to
	// us) a line starting with '$' is an inline command, and the "*1" after
	// it starts a real array whose huge bulk length is refused at once.
	rc = dialRaw(t, s.Addr())
	io.WriteString(rc.c, "$5\r\n*1\r\n$9"+"999999999\r\n"+strings.Repeat("data\n", 1000))
	if got := rc.read(); !strings.HasPrefix(got, "-ERR unknown command '$5'") { // as Redis: before NOAUTH
		t.Errorf("inline '$5' before AUTH: %s", got)
	}
	if got := rc.read(); got != "-ERR Protocol error: unauthenticated bulk length" {
		t.Errorf("huge bulk before AUTH: %s", got)
	}
	expectClosed(t, rc)

	// An endless inline line is cut off at the inline limit.
	rc = dialRaw(t, s.Addr())
	go func(c net.Conn) {
		chunk := strings.Repeat("y", 64<<10)
		for i := 0; i < 1000; i++ {
			if _, err := io.WriteString(c, chunk); err != nil {
				return
			}
		}
	}(rc.c)
	if got := rc.read(); got != "-ERR Protocol error: too big inline request" {
		t.Errorf("an endless inline line before AUTH: %s", got)
	}
	expectClosed(t, rc)

	// After AUTH the ordinary limits apply.
	rc = dialRaw(t, s.Addr())
	if got := rc.do("AUTH", "pw"); got != "+OK" {
		t.Fatal(got)
	}
	if got := rc.do("BF.ADD", "k", strings.Repeat("x", 1<<20)); got != ":1" {
		t.Errorf("1 MiB argument after AUTH: %s", got)
	}
}

// A client that pipelines large replies and never reads them holds at most
// one reply plus 64 KiB of the server's memory, and is disconnected once
// its replies make no progress for WriteTimeout.
func TestNonReadingClient(t *testing.T) { bothPaths(t, testNonReadingClient) }

func testNonReadingClient(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, WriteTimeout: 500 * time.Millisecond, goroutinePerConn: gpc})
	rc := dialRaw(t, s.Addr())
	// 48 MB of filter: BF.SCANDUMP returns 16 MiB chunks.
	if got := rc.do("BF.RESERVE", "big", "0.0001", "20000000", "NONSCALING"); got != "+OK" {
		t.Fatal(got)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var req strings.Builder
	for i := 0; i < 60; i++ { // ~1 GB of replies for ~1.5 KB of request
		req.WriteString("*3\r\n$11\r\nBF.SCANDUMP\r\n$3\r\nbig\r\n$1\r\n1\r\n")
	}
	io.WriteString(rc.c, req.String())
	// Never read. The server must drop us.
	deadline := time.Now().Add(10 * time.Second)
	peak := uint64(0)
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		if s.clients.Load() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a client that does not read was not disconnected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if grew := int64(peak) - int64(before.HeapInuse); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB for a client that does not read (want one 16 MiB reply at a time)", grew>>20)
	}
	if s.slowClients.Load() == 0 {
		t.Error("the disconnection was not counted")
	}
}

// --maxclients is enforced with Redis's error text.
func TestMaxClients(t *testing.T) { bothPaths(t, testMaxClients) }

func testMaxClients(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, MaxClients: 2, goroutinePerConn: gpc})
	a, b := dialRaw(t, s.Addr()), dialRaw(t, s.Addr())
	a.do("PING")
	b.do("PING")
	c := dialRaw(t, s.Addr())
	if got := c.read(); got != "-ERR max number of clients reached" {
		t.Fatalf("third client: %s", got)
	}
	expectClosed(t, c)
	a.c.Close()
	poll.True(t, 3*time.Second, "the closed client to leave", func() bool { return s.clients.Load() <= 1 })
	if got := dialRaw(t, s.Addr()).do("PING"); got != "+PONG" {
		t.Fatalf("after one left: %s", got)
	}
}

// --timeout closes idle clients.
func TestIdleTimeout(t *testing.T) { bothPaths(t, testIdleTimeout) }

func testIdleTimeout(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, Timeout: 200 * time.Millisecond, goroutinePerConn: gpc})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("PING"); got != "+PONG" {
		t.Fatal(got)
	}
	start := time.Now()
	expectClosed(t, rc)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("closed after %v, before the timeout", d)
	}
}

// QUIT answers +OK and closes; nothing pipelined after it runs.
func TestQuitInPipeline(t *testing.T) { bothPaths(t, testQuitInPipeline) }

func testQuitInPipeline(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, goroutinePerConn: gpc})
	rc := dialRaw(t, s.Addr())
	io.WriteString(rc.c, "*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nQUIT\r\n*3\r\n$6\r\nBF.ADD\r\n$9\r\nafterquit\r\n$1\r\nx\r\n")
	if got := rc.read(); got != "+PONG" {
		t.Fatal(got)
	}
	if got := rc.read(); got != "+OK" {
		t.Fatal(got)
	}
	expectClosed(t, rc)
	if got := dialRaw(t, s.Addr()).do("EXISTS", "afterquit"); got != ":0" {
		t.Fatalf("a command after QUIT ran: EXISTS afterquit = %s", got)
	}
}

// A TLS client that never finishes its handshake is dropped.
func TestTLSHandshakeTimeout(t *testing.T) {
	cert, key, _ := writeCert(t)
	s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSParams: noClientAuth, TLSCert: cert, TLSKey: key, HandshakeTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	start := time.Now()
	if _, err := bufio.NewReader(c).ReadByte(); err != io.EOF {
		t.Fatalf("silent TLS client: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("dropped only after %v", d)
	}
}

// bothPaths runs a connection test against the event loops and against
// the goroutine-per-connection path (TLS clients, other systems).
func bothPaths(t *testing.T, f func(t *testing.T, goroutinePerConn bool)) {
	t.Run("eventloop", func(t *testing.T) { f(t, false) })
	t.Run("goroutine", func(t *testing.T) { f(t, true) })
}

// TLS connections still in their handshake count against maxclients, and
// maxclients is checked before the handshake: silent connections past the
// limit are closed at once instead of each holding a descriptor and a
// goroutine for the handshake timeout.
func TestTLSHandshakesCountAgainstMaxClients(t *testing.T) {
	cert, key, pool := writeCert(t)
	s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSParams: noClientAuth, TLSCert: cert, TLSKey: key, MaxClients: 5, HandshakeTimeout: time.Hour})
	const n = 40
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	// Read them all at once: closed ones answer EOF, the others time out.
	eofs := make(chan bool, n)
	for _, c := range conns {
		go func(c net.Conn) {
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err := c.Read(make([]byte, 1))
			eofs <- err == io.EOF
		}(c)
	}
	closed := 0
	for range conns {
		if <-eofs {
			closed++
		}
	}
	if closed != n-5 {
		t.Fatalf("%d of %d silent TLS connections closed with maxclients 5, want %d", closed, n, n-5)
	}
	if got := s.clients.Load(); got != 5 {
		t.Fatalf("clients counted: %d, want 5", got)
	}
	for _, c := range conns {
		c.Close()
	}
	// The slots free up: a real TLS client is served.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tc, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err == nil {
			rc := &rawConn{t: t, c: tc, r: bufio.NewReader(tc)}
			got := rc.do("PING")
			tc.Close()
			if got == "+PONG" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS client served after the silent ones left: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
