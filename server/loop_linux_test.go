//go:build linux

package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"

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
	poll.Until(t, 10*time.Second, func() error {
		if l := logs.String(); !strings.Contains(l, "cannot watch a client for writability") {
			return fmt.Errorf("no log of the failed epoll_ctl; logs: %s", l)
		}
		return nil
	})
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
	poll.True(t, 5*time.Second, "an event loop to start", func() bool {
		s.lifeMu.Lock() // Serve starts the loops under it
		defer s.lifeMu.Unlock()
		if len(s.loops) > 0 {
			l = s.loops[0]
		}
		return l != nil
	})
	s.Close()
	// The loop closes its wake-up pipe as it ends; what follows checks
	// the same either way, sooner once it has.
	poll.Wait(5*time.Second, func() error {
		l.wakeMu.RLock()
		defer l.wakeMu.RUnlock()
		if !l.wakeClosed {
			return fmt.Errorf("wake-up pipe open")
		}
		return nil
	})
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
