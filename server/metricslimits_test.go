package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// metricsGet sends GET path on a keep-alive connection and reads the
// reply; the error is the connection's (closed, reset).
func metricsGet(c net.Conn, r *bufio.Reader, path string) (int, error) {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: metrics\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// The metrics listener closes idle keep-alive connections: they used to
// stay open for ever, and enough of them took every descriptor the process
// had, so the Redis port stopped answering.
func TestMetricsIdleConnectionsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0", metricsIdle: idle})
	const n = 10
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", s.MetricsAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		if code, err := metricsGet(c, bufio.NewReader(c), "/livez"); err != nil || code != 200 {
			t.Fatalf("GET /livez: %d %v", code, err)
		}
	}
	start := time.Now()
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("idle keep-alive connection %d after %v: %v, want it closed (EOF)", i, time.Since(start), err)
		}
	}
	if got := dialRaw(t, s.Addr()).do("PING"); got != "+PONG" {
		t.Fatalf("PING: %s", got)
	}
}

// At most metricsMaxConns metrics connections are open at once: one past
// the limit is closed at once, and the Redis port still answers.
func TestMetricsConnectionLimit(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0"})
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := 0; i < metricsMaxConns; i++ {
		c, err := net.Dial("tcp", s.MetricsAddr())
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		if code, err := metricsGet(c, bufio.NewReader(c), "/livez"); err != nil || code != 200 {
			t.Fatalf("connection %d: GET /livez: %d %v", i, code, err)
		}
	}
	for i := 0; i < 5; i++ {
		c, err := net.Dial("tcp", s.MetricsAddr())
		if err != nil {
			t.Fatal(err)
		}
		code, err := metricsGet(c, bufio.NewReader(c), "/livez")
		c.Close()
		if err == nil {
			t.Fatalf("connection %d past the limit of %d served (%d)", i+1, metricsMaxConns, code)
		}
	}
	if got := dialRaw(t, s.Addr()).do("PING"); got != "+PONG" {
		t.Fatalf("PING: %s", got)
	}
	// A connection that closes gives its place back.
	open[0].Close()
	open = open[1:]
	pollUntil(t, 5*time.Second, "no place freed after a metrics connection closed", func() bool {
		c, err := net.Dial("tcp", s.MetricsAddr())
		if err != nil {
			return false
		}
		defer c.Close()
		code, err := metricsGet(c, bufio.NewReader(c), "/livez")
		return err == nil && code == 200
	})
}
