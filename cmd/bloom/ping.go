package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	register(command{name: "ping", summary: "check that a server answers (health checks)", run: runPing})
}

// runPing sends PING to a server, authenticating with the password serve
// itself reads (BLOOMKIT_REQUIREPASS) unless --password or a URL gives one,
// so that a container's health check needs no other tool than the binary.
func runPing(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := help{
		name:     "ping",
		synopsis: "ping [--addr HOST:PORT | --addr redis://...] [--timeout D] [--ready]",
		about: `Sends PING to a server (bloom serve, or any Redis) and exits 0 when it
answers PONG, 2 otherwise, printing why. A server still loading its data
answers LOADING, as redis-server does: that is a live server, so ping
prints "loading" and exits 0 — a health check does not get a server
restarted in the middle of its load — unless --ready asks for PONG. The
password is --password, the one in a redis:// URL, or BLOOMKIT_REQUIREPASS
from the environment, which bloom serve reads too: a container's health
check can run "bloom ping" with the server's own environment.`,
		examples: `bloom ping
bloom ping --addr 10.0.0.5:6479 --timeout 1s
bloom ping --ready`,
	}
	fs := newFlags("ping")
	addr := fs.String("addr", "127.0.0.1:6479", "the server: host:port or a redis:// / rediss:// URL")
	pass := fs.String("password", os.Getenv("BLOOMKIT_REQUIREPASS"), "password to AUTH with (default $BLOOMKIT_REQUIREPASS)")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	ready := fs.Bool("ready", false, "exit 2 while the server is loading its data (LOADING), not 0")
	pos, code, ok := parseFlags(fs, h, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageErr(stderr, "ping", "unexpected argument %q", pos[0])
	}
	opt := &redis.Options{Addr: *addr}
	if u := *addr; strings.HasPrefix(u, "redis://") || strings.HasPrefix(u, "rediss://") {
		var err error
		if opt, err = redis.ParseURL(u); err != nil {
			return failf(stderr, "ping", "%s: %v", u, err)
		}
	}
	if opt.Password == "" {
		opt.Password = *pass
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = *timeout, *timeout, *timeout
	opt.MaxRetries = -1
	opt.Protocol = 2
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	got, err := c.Ping(ctx).Result()
	if err != nil && strings.HasPrefix(err.Error(), "LOADING ") && !*ready {
		fmt.Fprintf(stdout, "loading: %s answers %v\n", opt.Addr, err)
		return exitOK
	}
	if err != nil {
		return failf(stderr, "ping", "%s: %v", opt.Addr, err)
	}
	if got != "PONG" {
		return failf(stderr, "ping", "%s answered %q, not PONG", opt.Addr, got)
	}
	return exitOK
}
