package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// bloom serve --config FILE reads the file, a flag wins over it, and
// CONFIG REWRITE writes CONFIG SET's changes back to it; --pprof-addr
// serves Go's profiles.
func TestServeConfigFile(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "bloomkit.conf")
	conf := "# test\nbind 127.0.0.1\nport " + strconv.Itoa(port) + "\ndir " + filepath.Join(dir, "data") +
		"\nmaxclients 33\ntimeout 40\nslowlog-max-len 5\nreplica-priority 7\n"
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pprofAddr := pl.Addr().String()
	pl.Close()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runServe([]string{"--config", file, "--timeout", "50s", "--pprof-addr", pprofAddr, "--replicaof", "127.0.0.1 1"}, nil, &bytes.Buffer{}, &stderr)
	}()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	waitPing(t, c, 10*time.Second, stderr.String)
	got, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// --replicaof with --config: the flag, and the file's replication
	// settings, reach the server.
	if role, err := c.Do(ctx, "ROLE").Slice(); err != nil || len(role) < 3 || role[0] != "slave" || role[2] != int64(1) {
		t.Errorf("ROLE = %v %v, want a replica of port 1 (--replicaof)", role, err)
	}
	for k, want := range map[string]string{"maxclients": "33", "timeout": "50", "slowlog-max-len": "5", "replica-priority": "7"} {
		if got[k] != want {
			t.Errorf("CONFIG GET %s = %q, want %q", k, got[k], want)
		}
	}
	// --pprof-addr serves Go's profiles.
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "# HeapAlloc") {
		t.Errorf("--pprof-addr heap profile: %d %.200q", resp.StatusCode, body)
	}
	if err := c.ConfigSet(ctx, "maxclients", "44").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigRewrite(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(file)
	if !strings.Contains(string(raw), "maxclients 44\n") || !strings.Contains(string(raw), "timeout 50\n") {
		t.Errorf("rewritten file:\n%s", raw)
	}
	// What the process's signal handler does with SIGTERM.
	temps.Lock()
	hook := temps.hook
	temps.Unlock()
	hook <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// Debian's stock redis.conf (installed with redis-server) starts bloom
// serve: every directive works or is listed in one warning, bind's two
// addresses are both listened on, and a misspelt directive is still an
// error naming the file and line.
func TestServeStockRedisConf(t *testing.T) {
	stock, err := os.ReadFile("/etc/redis/redis.conf")
	if err != nil {
		if os.Getenv("BLOOMKIT_REQUIRE_REDIS") == "1" {
			t.Fatalf("stock redis.conf: %v", err)
		}
		t.Skipf("no stock /etc/redis/redis.conf (install redis-server): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	dir := t.TempDir()
	var lines []string
	for _, line := range strings.Split(string(stock), "\n") {
		switch f := strings.Fields(line); {
		case len(f) == 0:
		case f[0] == "port":
			line = "port " + port
		case f[0] == "dir":
			line = "dir " + filepath.Join(dir, "data")
		case f[0] == "logfile":
			line = "logfile " + filepath.Join(dir, "log")
		case f[0] == "pidfile":
			line = "pidfile " + filepath.Join(dir, "pid")
		}
		lines = append(lines, line)
	}
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	file := filepath.Join(dir, "redis.conf")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\nmaxmemory 4GiB\n"), 0o600)
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runServe([]string{"--config", file}, nil, &bytes.Buffer{}, &stderr) }()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	waitPing(t, c, 10*time.Second, func() string {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return stderr.String() + string(log)
	})
	if err := c.Do(ctx, "BF.ADD", "k", "a").Err(); err != nil {
		t.Fatal(err)
	}
	got, _ := c.ConfigGet(ctx, "*").Result()
	if got["maxmemory"] != "4294967296" || got["protected-mode"] != "yes" || got["appendfsync"] != "everysec" {
		t.Errorf("CONFIG GET: maxmemory %q protected-mode %q appendfsync %q", got["maxmemory"], got["protected-mode"], got["appendfsync"])
	}
	// bind 127.0.0.1 -::1: the second address too, where IPv6 exists.
	if l6, err := net.Listen("tcp", "[::1]:0"); err == nil {
		l6.Close()
		c6 := redis.NewClient(&redis.Options{Addr: "[::1]:" + port, Protocol: 2})
		if err := c6.Ping(ctx).Err(); err != nil {
			t.Errorf("bind's second address ::1 is not listened on: %v", err)
		}
		c6.Close()
	}
	pid, _ := os.ReadFile(filepath.Join(dir, "pid"))
	if strings.TrimSpace(string(pid)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pidfile holds %q", pid)
	}
	temps.Lock()
	hook := temps.hook
	temps.Unlock()
	hook <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	if n := strings.Count(string(log), "directives ignored"); n != 1 || !strings.Contains(string(log), "databases (one database)") {
		t.Errorf("want one warning listing the ignored directives, got %d:\n%s", n, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "pid")); !os.IsNotExist(err) {
		t.Errorf("pidfile left behind: %v", err)
	}
	// A misspelt directive is an error with file:line.
	os.WriteFile(file, []byte("port "+port+"\nprotected-mdoe no\n"), 0o600)
	stderr.Reset()
	if code := runServe([]string{"--config", file}, nil, &bytes.Buffer{}, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), file+`:2: unknown directive "protected-mdoe"`) {
		t.Errorf("misspelt directive: exit %d, %s", code, stderr.String())
	}
}

// supervised systemd: STATUS while loading, READY=1 once serving, WATCHDOG=1 at half of
// WATCHDOG_USEC, STOPPING=1 on SIGTERM, over a fake notify socket.
func TestServeSupervisedSystemd(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Skipf("no unixgram sockets here: %v", err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runServe([]string{"--addr", addr, "--dir", filepath.Join(dir, "data"), "--supervised", "systemd"}, nil, &bytes.Buffer{}, &stderr)
	}()
	next := func() string {
		t.Helper()
		buf := make([]byte, 512)
		ln.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, _, err := ln.ReadFromUnix(buf)
		if err != nil {
			t.Fatalf("no notification: %v (%s)", err, stderr.String())
		}
		return string(buf[:n])
	}
	// As redis-server: a status while the data loads, READY=1 once it is
	// loaded (the watchdog is fed meanwhile).
	got := next()
	for strings.HasPrefix(got, "STATUS=loading") || got == "WATCHDOG=1" {
		got = next()
	}
	if !strings.HasPrefix(got, "READY=1\n") || !strings.Contains(got, "STATUS=serving on "+addr) {
		t.Fatalf("notification %q, want READY=1", got)
	}
	// The server is serving when READY=1 arrives.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("READY=1 before the server accepts: %v", err)
	}
	c.Close()
	start := time.Now()
	for i := 0; i < 2; i++ {
		if got := next(); got != "WATCHDOG=1" {
			t.Fatalf("notification %q, want WATCHDOG=1", got)
		}
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("two watchdog pings in %v: not at half of WATCHDOG_USEC (100 ms)", d)
	}
	temps.Lock()
	hook := temps.hook
	temps.Unlock()
	hook <- syscall.SIGTERM
	for {
		got := next()
		if got == "WATCHDOG=1" {
			continue // one sent before the signal arrived
		}
		if got != "STOPPING=1" {
			t.Fatalf("on SIGTERM: %q, want STOPPING=1", got)
		}
		break
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
