//go:build linux

package server

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A client whose replies fill its socket while the loop cannot watch it
// for writability is disconnected, and the failure is logged, instead of
// waiting forever for an event that was never asked for.
func TestLoopEpollFailureDisconnectsAndReports(t *testing.T) {
	real := epollCtl
	t.Cleanup(func() { epollCtl = real }) // after the server has stopped
	epollCtl = func(epfd, op, fd int, ev *unix.EpollEvent) error {
		if op == unix.EPOLL_CTL_MOD && ev != nil && ev.Events&unix.EPOLLOUT != 0 {
			return unix.ENOMEM
		}
		return real(epfd, op, fd, ev)
	}
	var logs lockedBuffer
	s := startServer(t, Config{NoPersistence: true, EventLoops: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 1 MiB value, then 64 GETs of it that the client does not read.
	val := strings.Repeat("x", 1<<20)
	var req bytes.Buffer
	req.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n" + val + "\r\n")
	for range 64 {
		req.WriteString("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "cannot watch a client for writability") {
		if time.Now().After(deadline) {
			t.Fatalf("no log of the failed epoll_ctl; logs: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The connection is closed: reading drains what was sent, then EOF.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the client was not disconnected: %v", err)
	}
}

// lockedBuffer is a bytes.Buffer that the server's log and the test may
// use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A wake-up after the loop shut down (a late CLIENT KILL, PUBLISH or
// handed connection) writes nothing: the wake-up pipe's descriptor
// numbers are free again and may be another file's or client's, which
// would get a stray byte (seen as "\x01" before a reply in parallel tests).
func TestWakeUpAfterShutdownWritesNothing(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	var l *eventLoop
	for deadline := time.Now().Add(5 * time.Second); l == nil && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.lifeMu.Lock() // Serve starts the loops under it
		if len(s.loops) > 0 {
			l = s.loops[0]
		}
		s.lifeMu.Unlock()
	}
	if l == nil {
		t.Fatal("the server started no event loop")
	}
	s.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.wakeMu.RLock()
		closed := l.wakeClosed
		l.wakeMu.RUnlock()
		if closed || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Take descriptors until the wake-up pipe's write end is ours (the
	// lowest free numbers are handed out first).
	var pipes [][2]int
	defer func() {
		for _, p := range pipes {
			unix.Close(p[0])
			unix.Close(p[1])
		}
	}()
	reused := false
	for i := 0; i < 256 && !reused; i++ {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		pipes = append(pipes, p)
		reused = p[1] == l.wake[1]
	}
	if !reused {
		t.Skipf("descriptor %d was not handed out again", l.wake[1])
	}
	l.wakeUp()
	for _, p := range pipes {
		var b [8]byte
		if n, _ := unix.Read(p[0], b[:]); n > 0 {
			t.Fatalf("a wake-up after shutdown wrote %q into another pipe on descriptor %d", b[:n], p[1])
		}
	}
}
