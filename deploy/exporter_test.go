package deploy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/server"
	"github.com/redis/go-redis/v9"
)

// exporterBin is Debian's redis_exporter (package prometheus-redis-exporter,
// installed by make deps).
const exporterBin = "prometheus-redis-exporter"

// TestRedisExporterParity runs the real redis_exporter against a real
// redis-server and against bloom serve, holding the same kinds of keys, and
// compares the metric names it publishes: every name it finds on Redis it
// finds on bloom serve, so a dashboard or alert built on redis_exporter for
// Redis keeps working.
func TestRedisExporterParity(t *testing.T) {
	if _, err := exec.LookPath(exporterBin); err != nil {
		if os.Getenv("BLOOMKIT_REQUIRE_EXPORTER") == "1" {
			t.Fatalf("%s not found (make deps installs it) and BLOOMKIT_REQUIRE_EXPORTER=1", exporterBin)
		}
		t.Skipf("%s not found: make deps installs Debian's prometheus-redis-exporter", exporterBin)
	}
	r := redistest.Start(t)
	s := startServer(t, server.Config{})
	ctx := context.Background()
	fill := func(addr string) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		for _, cmd := range [][]any{{"SET", "plain", "v"}, {"SET", "ttl", "v", "EX", "1000"}} {
			if err := c.Do(ctx, cmd...).Err(); err != nil {
				t.Fatalf("%s on %s: %v", cmd, addr, err)
			}
		}
	}
	fill(r.Addr)
	fill(s.Addr())
	onRedis := exporterNames(t, r.Addr)
	onBloom := exporterNames(t, s.Addr())
	var missing []string
	for n := range onRedis {
		if !onBloom[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	t.Logf("redis_exporter: %d metric names on redis-server, %d on bloom serve", len(onRedis), len(onBloom))
	if len(missing) > 0 {
		t.Errorf("redis_exporter finds %d metric names on redis-server and not on bloom serve:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// exporterNames runs redis_exporter against addr and returns the names of
// the metrics it publishes (labels left out), once it reports redis_up 1.
func exporterNames(t *testing.T, addr string) map[string]bool {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := l.Addr().String()
	l.Close()
	cmd := exec.Command(exporterBin, "-redis.addr", "redis://"+addr, "-web.listen-address", web)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var names map[string]bool
	err = poll.Wait(20*time.Second, func() error {
		resp, err := http.Get("http://" + web + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		names = map[string]bool{}
		up := false
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			name, _, _ := strings.Cut(line, " ")
			name, _, _ = strings.Cut(name, "{")
			names[name] = true
			up = up || line == "redis_up 1"
		}
		io.Copy(io.Discard, resp.Body)
		if !up {
			return fmt.Errorf("redis_exporter does not report redis_up 1 for %s", addr)
		}
		return nil
	})
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%v; its log:\n%s", err, log.String())
	}
	for n := range names {
		if !strings.HasPrefix(n, "redis_") {
			delete(names, n) // the exporter's own (go_, process_, promhttp_)
		}
	}
	return names
}
