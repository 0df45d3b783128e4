package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

// proc is a server child process (bloom serve or redis-server).
type proc struct {
	name    string
	addr    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// startProc starts argv (with {addr} and {port} replaced by a free
// address), logs to logPath and waits until PING answers.
func startProc(ctx context.Context, name, logPath string, argv ...string) (*proc, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = strings.NewReplacer("{addr}", addr, "{port}", port).Replace(a)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	log.Close()
	p := &proc{name: name, addr: addr, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	c := redis.NewClient(bloomproc.ClientOptions(addr, time.Second))
	defer c.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		cancel()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited during start-up (%v); its log ends:\n%s", name, p.waitErr, tail(logPath, 2048))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not answer PING within a minute; its log ends:\n%s", name, tail(logPath, 2048))
		}
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGKILL (nothing here needs to survive) and waits.
func (p *proc) stop() {
	if p == nil || p.cmd == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "(no log)"
	}
	off := max(st.Size()-n, 0)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	return string(bytes.TrimSpace(b))
}

// statusKB reads a "Name:   123 kB" field of /proc/pid/status in bytes.
func statusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return kbField(f, field)
}

func kbField(r io.Reader, field string) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, field+":") {
			continue
		}
		f := strings.Fields(line[len(field)+1:])
		if len(f) < 1 {
			break
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return v << 10, nil
	}
	return 0, fmt.Errorf("no %s field", field)
}

// privateBytes is a process's memory no other process shares
// (Private_Clean + Private_Dirty of /proc/pid/smaps_rollup): for a forked
// Redis child, the pages copied on write plus its own allocations.
func privateBytes(pid int) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	c, err := kbField(bytes.NewReader(raw), "Private_Clean")
	if err != nil {
		return 0, err
	}
	d, err := kbField(bytes.NewReader(raw), "Private_Dirty")
	if err != nil {
		return 0, err
	}
	return c + d, nil
}

// resetPeak resets VmHWM of pid to its current RSS (Linux ≥ 4.0, needs
// permission to write /proc/pid/clear_refs).
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// children lists the child processes of pid (the forked Redis saver).
func children(pid int) []int {
	if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		var out []int
		for _, f := range strings.Fields(string(raw)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut after ")".
		i := bytes.LastIndexByte(raw, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

var errUnsupported = errors.New("not supported by this server")
