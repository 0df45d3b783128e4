package server

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// goroutinesIn counts the goroutines whose stack passes through fn (a
// function name as runtime.Stack prints it).
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// waiters counts the WAIT calls waiting for acknowledgements.
func (s *Server) waiterCount() int {
	s.repl.waitMu.Lock()
	defer s.repl.waitMu.Unlock()
	return len(s.repl.waiters)
}

// pollUntil fails the test unless cond holds within d.
func pollUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A client whose reply is held and that goes away is freed at once, as
// Redis frees a blocked client: its session, its place under maxclients,
// the goroutines that waited for it and, for WAIT, its waiter. WAIT 1 0
// on a master without replicas waits for ever: clients that sent it and
// left used to stay until shutdown, and maxclients of them locked everyone
// out. A BF.MERGE finishing in the background held a client that left
// until the merge was done.
func TestHeldReplyFreedOnDisconnect(t *testing.T) {
	const maxClients = 4
	models := map[string]func(t *testing.T, cfg Config) (*Server, func() net.Conn){
		"eventloop": func(t *testing.T, cfg Config) (*Server, func() net.Conn) { return plainModel(t, cfg, false) },
		"goroutine": func(t *testing.T, cfg Config) (*Server, func() net.Conn) { return plainModel(t, cfg, true) },
		"tls": func(t *testing.T, cfg Config) (*Server, func() net.Conn) {
			cert, key, pool := writeCert(t)
			cfg.TLSAddr, cfg.TLSParams, cfg.TLSCert, cfg.TLSKey = "127.0.0.1:0", noClientAuth, cert, key
			s := startServer(t, cfg)
			return s, func() net.Conn {
				c, err := tls.Dial("tcp", s.Addr(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
		},
	}
	for _, name := range []string{"eventloop", "goroutine", "tls"} {
		model := models[name]
		t.Run("wait/"+name, func(t *testing.T) {
			s, dial := model(t, Config{NoPersistence: true, MaxClients: maxClients})
			testHeldReplyFreed(t, s, dial, func(rc *rawConn) {
				rc.send("WAIT", "1", "0")
				pollUntil(t, 5*time.Second, "WAIT is not waiting", func() bool { return s.waiterCount() == 1 })
			})
			// A WAIT that is answered still is.
			c := dial()
			defer c.Close()
			rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
			if got := rc.do("WAIT", "1", "20"); got != ":0" {
				t.Fatalf("WAIT 1 20 = %s", got)
			}
			// CLIENT KILL frees a client blocked in WAIT as well.
			held := dial()
			defer held.Close()
			hc := &rawConn{t: t, c: held, r: bufio.NewReader(held)}
			id := hc.do("CLIENT", "ID")
			hc.send("WAIT", "1", "0")
			pollUntil(t, 5*time.Second, "WAIT is not waiting", func() bool { return s.waiterCount() == 1 })
			if got := rc.do("CLIENT", "KILL", "ID", strings.TrimPrefix(id, ":")); got != ":1" {
				t.Fatalf("CLIENT KILL ID %s = %s", id, got)
			}
			pollUntil(t, 5*time.Second, "a client killed while blocked in WAIT is still counted", func() bool {
				return s.clients.Load() == 1 && s.waiterCount() == 0
			})
		})
		t.Run("merge/"+name, func(t *testing.T) {
			// Every merge runs in the background and stops before its
			// first chunk until the test ends.
			chunk, async := keyspace.MergeChunk, keyspace.MergeAsyncBytes
			keyspace.MergeChunk, keyspace.MergeAsyncBytes = 64, 0
			started := make(chan struct{}, 1)
			gate := make(chan struct{})
			keyspace.MergePause = func() {
				select {
				case started <- struct{}{}:
				default:
				}
				<-gate
			}
			s, dial := model(t, Config{NoPersistence: true, MaxClients: maxClients})
			t.Cleanup(func() { // after the gate opens, before the server closes
				s.db.WaitMerges()
				keyspace.MergeChunk, keyspace.MergeAsyncBytes, keyspace.MergePause = chunk, async, nil
			})
			t.Cleanup(func() { close(gate) })
			i := 0
			testHeldReplyFreed(t, s, dial, func(rc *rawConn) {
				i++
				dst := fmt.Sprint("dst", i)
				for _, k := range []string{dst, "src"} {
					if got := rc.do("BF.RESERVE", k, "0.01", "1000"); got != "+OK" && k == dst {
						t.Fatalf("BF.RESERVE %s = %s", k, got)
					}
				}
				rc.send("BF.MERGE", dst, "src")
				select {
				case <-started:
				case <-time.After(5 * time.Second):
					t.Fatal("the merge did not start")
				}
			})
		})
	}
}

func plainModel(t *testing.T, cfg Config, goroutinePerConn bool) (*Server, func() net.Conn) {
	cfg.goroutinePerConn = goroutinePerConn
	s := startServer(t, cfg)
	return s, func() net.Conn {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// testHeldReplyFreed connects three times maxclients clients one after
// another; each has hold make its reply held, and goes away.
func testHeldReplyFreed(t *testing.T, s *Server, dial func() net.Conn, hold func(rc *rawConn)) {
	for i := 0; i < 3*int(s.maxClients()); i++ {
		c := dial()
		rc := &rawConn{t: t, c: c, r: bufio.NewReader(c)}
		if got := rc.do("PING"); got != "+PONG" {
			t.Fatalf("client %d: PING = %s", i, got)
		}
		hold(rc)
		c.Close()
		pollUntil(t, 5*time.Second, "a client that went away while its reply was held is still counted", func() bool {
			return s.clients.Load() == 0 && s.waiterCount() == 0
		})
		s.smu.Lock()
		n := len(s.sessions)
		s.smu.Unlock()
		if n != 0 {
			t.Fatalf("%d sessions listed after their clients went away", n)
		}
	}
	pollUntil(t, 5*time.Second, "goroutines of gone clients remain", func() bool {
		return goroutinesIn("server.cmdWait") == 0 && goroutinesIn("server.(*Server).serveConn") == 0 &&
			goroutinesIn("server.(*eventLoop).hold") == 0
	})
}

// A client blocked in WAIT is not idle: the idle timeout does not close it
// (as in Redis, which exempts blocked clients), and it gets its answer.
func TestHeldReplyNotIdle(t *testing.T) { bothPaths(t, testHeldReplyNotIdle) }

func testHeldReplyNotIdle(t *testing.T, gpc bool) {
	s := startServer(t, Config{NoPersistence: true, Timeout: 100 * time.Millisecond, goroutinePerConn: gpc})
	rc := dialRaw(t, s.Addr())
	start := time.Now()
	if got := rc.do("WAIT", "1", "600"); got != ":0" {
		t.Fatalf("WAIT 1 600 with an idle timeout of 100 ms = %s", got)
	}
	if d := time.Since(start); d < 550*time.Millisecond {
		t.Fatalf("WAIT answered after %v, before its timeout", d)
	}
	expectClosed(t, rc) // idle afterwards: closed
}
