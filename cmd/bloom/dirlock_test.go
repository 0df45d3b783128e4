package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// serveIn starts `bloom serve` in dir with args and waits for PING.
func serveIn(t *testing.T, dir string, args ...string) (*exec.Cmd, *redis.Client, *strings.Builder) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--log-level", "warn"}, args...)...)
	cmd.Dir = dir
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	t.Cleanup(func() { c.Close() })
	waitPing(t, c, 20*time.Second, log.String)
	return cmd, c, &log
}

// Two `bloom serve` started from one folder use the same default data
// directory: the second exits at once naming it and the first's PID, and
// `bloom check-log --fix` refuses to cut the running server's log.
func TestServeDirLockDefaultDir(t *testing.T) {
	dir := t.TempDir()
	a, c, _ := serveIn(t, dir)
	ctx := context.Background()
	if err := c.Do(ctx, "BF.ADD", "k", "a").Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- bloomIn(t, dir, "", "serve", "--addr", "127.0.0.1:0") }()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the second server did not exit")
	}
	data, _ := filepath.Abs(filepath.Join(dir, "bloomkit-data"))
	if r.code == 0 || !strings.Contains(r.stderr, data) || !strings.Contains(r.stderr, "process "+strconv.Itoa(a.Process.Pid)) {
		t.Fatalf("second server: exit %d, stderr %q; want a refusal naming %s and pid %d", r.code, r.stderr, data, a.Process.Pid)
	}
	logs, _ := filepath.Glob(filepath.Join(data, "appendonly.*.aof"))
	if len(logs) != 1 {
		t.Fatalf("logs: %v", logs)
	}
	bloomIn(t, dir, "", "check-log", "--fix", logs[0]).want(t, 2, "check-log --fix while the server runs")
	if err := c.Do(ctx, "BF.ADD", "k2", "b").Err(); err != nil {
		t.Fatal(err)
	}
	// kill -9 and restart: both writes are in the log that was kept.
	a.Process.Kill()
	a.Wait()
	_, c2, _ := serveIn(t, dir)
	for k, item := range map[string]string{"k": "a", "k2": "b"} {
		if n, err := c2.Do(ctx, "BF.EXISTS", k, item).Int(); err != nil || n != 1 {
			t.Errorf("after kill -9 and restart, BF.EXISTS %s %s = %v %v", k, item, n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "bloomkit.lock")); err != nil {
		t.Error(err)
	}
}
