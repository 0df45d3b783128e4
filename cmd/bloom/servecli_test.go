package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// redis-server's command-line habits: the config file as the first
// argument, --port over the file's port (on the file's bind), --version.
func TestServeRedisCommandLine(t *testing.T) {
	dir := t.TempDir()
	filePort, port := freePort(t), freePort(t)
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte("bind 127.0.0.1\nport "+strconv.Itoa(filePort)+"\ndir "+filepath.Join(dir, "data")+"\nmaxclients 77\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	startServeArgs(t, dir, port, conf, "--port", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	defer c.Close()
	ctx := context.Background()
	got, err := c.ConfigGet(ctx, "maxclients").Result()
	if err != nil || got["maxclients"] != "77" {
		t.Fatalf("the positional config file was not read: CONFIG GET maxclients = %v, %v", got, err)
	}
	if got, _ := c.ConfigGet(ctx, "port").Result(); got["port"] != strconv.Itoa(port) {
		t.Fatalf("CONFIG GET port = %v, want %d", got, port)
	}

	var out, errOut strings.Builder
	if code := run([]string{"serve", "--version"}, strings.NewReader(""), &out, &errOut); code != exitOK {
		t.Fatalf("bloom serve --version: exit %d: %s", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "bloom serve ") || !strings.Contains(out.String(), "redis_version 7.2.4") {
		t.Fatalf("bloom serve --version = %q", out.String())
	}
	// A second positional argument is still a usage error.
	errOut.Reset()
	if code := run([]string{"serve", conf, "extra"}, strings.NewReader(""), &out, &errOut); code == exitOK || !strings.Contains(errOut.String(), `unexpected argument "extra"`) {
		t.Fatalf("bloom serve conf extra: exit %d, %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"serve", "--port", "70000"}, strings.NewReader(""), &out, &errOut); code == exitOK || !strings.Contains(errOut.String(), "--port") {
		t.Fatalf("bloom serve --port 70000: exit %d, %q", code, errOut.String())
	}
}
