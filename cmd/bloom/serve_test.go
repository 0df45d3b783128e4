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
		"\nmaxclients 33\ntimeout 40\nslowlog-max-len 5\n"
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
		done <- runServe([]string{"--config", file, "--timeout", "50s", "--pprof-addr", pprofAddr}, nil, &bytes.Buffer{}, &stderr)
	}()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), Protocol: 2})
	defer c.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"maxclients": "33", "timeout": "50", "slowlog-max-len": "5"} {
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
