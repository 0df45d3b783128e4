package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

// server is one `bloom serve` child process on a data directory that
// outlives it: every start picks a fresh free port, appends the server's
// output to one log file and waits until PING answers.
type server struct {
	bin, dir, fsync string
	logPath         string
	startTimeout    time.Duration

	addr    string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error
}

// start launches the server and waits until it answers PING. A server that
// exits during start-up is an error carrying the tail of its log.
func (s *server) start(ctx context.Context, label string) error {
	for attempt := 0; ; attempt++ {
		err := s.start1(ctx, label)
		if err == nil {
			return nil
		}
		// Another process may have taken the port between freeAddr and
		// the server's bind: retry that (only that) with a new port.
		if attempt < 3 && strings.Contains(s.logTail(2048), "address already in use") {
			continue
		}
		return err
	}
}

func (s *server) start1(ctx context.Context, label string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("server log: %w", err)
	}
	fmt.Fprintf(log, "\n=== torture %s: %s: bloom serve on %s ===\n", time.Now().UTC().Format(time.RFC3339Nano), label, addr)
	cmd := exec.Command(s.bin, "serve", "--addr", addr, "--dir", s.dir, "--appendfsync", s.fsync, "--log-level", "info")
	cmd.Stdout, cmd.Stderr = log, log
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	log.Close() // the child holds its own descriptor
	s.addr, s.cmd, s.exited, s.waitErr = addr, cmd, make(chan struct{}), nil
	go func(exited chan struct{}) {
		s.waitErr = cmd.Wait()
		close(exited)
	}(s.exited)

	// A new client for every attempt, dialling once: go-redis's pool,
	// after failed dials, answers with the last error and dials again
	// once a second, and its dialer retries a refused connection every
	// 100 ms; either made a restart look slower than it was.
	deadline := time.Now().Add(s.startTimeout)
	for {
		opt := bloomproc.ClientOptions(addr, 500*time.Millisecond)
		opt.DialerRetries = 1
		c := redis.NewClient(opt)
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err := c.Ping(pctx).Err()
		cancel()
		c.Close()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("bloom serve exited during start-up (%v); its log ends:\n%s", s.waitErr, s.logTail(4096))
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("bloom serve did not answer PING within %v; its log ends:\n%s", s.startTimeout, s.logTail(4096))
		}
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (s *server) kill() error {
	if s.cmd == nil {
		return nil
	}
	defer func() { s.cmd = nil }()
	select {
	case <-s.exited:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL bloom serve: %w", err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("bloom serve did not exit 10 s after SIGKILL")
	}
}

// stop sends SIGTERM (the server saves and exits) and waits up to timeout;
// a server that does not exit in time is killed and that is an error, as is
// a non-zero exit status.
func (s *server) stop(timeout time.Duration) error {
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM bloom serve: %w", err)
	}
	select {
	case <-s.exited:
		s.cmd = nil
		if s.waitErr != nil {
			return fmt.Errorf("bloom serve exited with %v after SIGTERM; its log ends:\n%s", s.waitErr, s.logTail(4096))
		}
		return nil
	case <-time.After(timeout):
		s.kill()
		return fmt.Errorf("bloom serve did not exit within %v of SIGTERM (killed); its log ends:\n%s", timeout, s.logTail(4096))
	}
}

// logTail returns the last n bytes of the server's log.
func (s *server) logTail(n int64) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "(log: " + err.Error() + ")"
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	return string(bytes.TrimSpace(b))
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// isReply reports whether err is an error reply from the server (the
// command was answered: refused) rather than a network failure or timeout
// (the outcome is unknown).
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}
