package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
	"github.com/redis/go-redis/v9"
)

// proc is a server process this program started; its output goes to log.
type proc struct {
	cmd  *exec.Cmd
	port int
	log  string
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) stop() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// logTail is the end of the process's log, for an error message.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// startProc starts a server, its output to log, and waits until it
// answers.
func startProc(cmd *exec.Cmd, port int, log string) (*proc, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, port: port, log: log}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		// Up: it answers PING (not LOADING, as a server reading its data
		// directory does).
		c := client(port)
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s did not answer PING on %d in 2 minutes (%v):\n%s", cmd.Path, port, err, p.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRedis starts redis-server with RedisBloom, no save points and no
// log unless extra says otherwise (a replica still writes the RDB it
// receives), diskless sync with no delay (Redis 7's default method,
// without the wait for more replicas), loading dir/dump.rdb if there is
// one.
func startRedis(module, dir string, port int, extra ...string) (*proc, error) {
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--protected-mode", "no",
		"--loadmodule", module, "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		"--loglevel", "warning", "--logfile", ""}, extra...)
	return startProc(exec.Command("redis-server", args...), port, filepath.Join(dir, "redis.log"))
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func client(port int) *redis.Client {
	return redis.NewClient(bloomproc.ClientOptions(addr(port), 60*time.Second))
}

// cpuSeconds is a process's user + system CPU time, its waited-for
// children's included (Redis's fork for a sync), from /proc/<pid>/stat
// (clock ticks of 1/100 s, Linux's USER_HZ).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// After the command: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime cutime cstime.
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	var ticks int64
	for _, x := range f[11:15] {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
		}
		ticks += n
	}
	return float64(ticks) / 100, nil
}

// loadavg is /proc/loadavg's first three fields.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// infoField reads one field of INFO section.
func infoField(ctx context.Context, c *redis.Client, section, field string) (string, error) {
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("INFO %s has no %s", section, field)
}

func infoInt(ctx context.Context, c *redis.Client, section, field string) (int64, error) {
	v, err := infoField(ctx, c, section, field)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO %s %s = %q", section, field, v)
	}
	return n, nil
}

// waitFor polls cond every step until it is true, fails or time runs out.
func waitFor(what string, limit, step time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not after %v", what, limit)
		}
		time.Sleep(step)
	}
}

// caughtUp waits until the target's offset reaches the source's offset as
// read now.
func caughtUp(ctx context.Context, src, dst *redis.Client, limit time.Duration) (time.Duration, error) {
	t0 := time.Now()
	mo, err := infoInt(ctx, src, "replication", "master_repl_offset")
	if err != nil {
		return 0, err
	}
	err = waitFor("the target reaching the source's offset", limit, 2*time.Millisecond, func() (bool, error) {
		ro, err := infoInt(ctx, dst, "replication", "slave_repl_offset")
		return ro >= mo, err
	})
	return time.Since(t0), err
}
