package server

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testLogger writes server logs to the test log (visible with -v or on failure).
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// startServer runs a server on a free loopback port until the test ends.
func startServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Dir == "" && !cfg.NoPersistence {
		cfg.Dir = t.TempDir()
	}
	if cfg.Addr == "" && cfg.TLSAddr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Serve(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
	return s
}

// rawConn is a minimal RESP client that returns replies in a compact
// notation, so tests can compare exact reply types and texts:
// +OK  -ERR x  :1  "bulk"  nil  #t  [a b]  {k:v}  ~[..]
type rawConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawConn) send(args ...string) {
	var b strings.Builder
	appendCommand(&b, args)
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		rc.t.Fatal(err)
	}
}

func appendCommand(b *strings.Builder, args []string) {
	fmt.Fprintf(b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(b, "$%d\r\n%s\r\n", len(a), a)
	}
}

// pipeline sends every command in one write, then reads their replies.
func (rc *rawConn) pipeline(cmds ...[]string) []string {
	rc.t.Helper()
	var b strings.Builder
	for _, args := range cmds {
		appendCommand(&b, args)
	}
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		rc.t.Fatal(err)
	}
	out := make([]string, len(cmds))
	for i := range out {
		out[i] = rc.read()
	}
	return out
}

func (rc *rawConn) do(args ...string) string {
	rc.t.Helper()
	rc.send(args...)
	return rc.read()
}

func (rc *rawConn) read() string {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, err := readReply(rc.r)
	if err != nil {
		rc.t.Fatalf("read reply: %v", err)
	}
	return s
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty line")
	}
	body := line[1:]
	switch line[0] {
	case '+', '-', ':':
		return line, nil
	case '#', ',':
		return line, nil
	case '_':
		return "nil", nil
	case '$', '=':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return "nil", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return strconv.Quote(string(buf[:n])), nil
	case '*', '%', '~', '>':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return "nil", nil
		}
		parts := []string{}
		count := n
		if line[0] == '%' {
			count = 2 * n
		}
		for i := 0; i < count; i++ {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		switch line[0] {
		case '%':
			var kv []string
			for i := 0; i < len(parts); i += 2 {
				kv = append(kv, parts[i]+":"+parts[i+1])
			}
			return "{" + strings.Join(kv, " ") + "}", nil
		case '~':
			return "~[" + strings.Join(parts, " ") + "]", nil
		case '>':
			return ">[" + strings.Join(parts, " ") + "]", nil
		}
		return "[" + strings.Join(parts, " ") + "]", nil
	}
	return "", fmt.Errorf("unknown reply type %q", line)
}

// requireRedis skips (or fails under BLOOMKIT_REQUIRE_REDIS=1) when a
// Redis tool is missing.
func requireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := name + " not found in PATH (install Debian's redis-tools / redis-server: make deps)"
		if os.Getenv("BLOOMKIT_REQUIRE_REDIS") == "1" {
			t.Fatal(msg + "; BLOOMKIT_REQUIRE_REDIS=1 requires it")
		}
		t.Skip(msg)
	}
	return p
}

// quietLogger drops the server's logs (for tests that fail things on purpose).
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
