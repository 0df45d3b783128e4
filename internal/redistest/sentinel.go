package redistest

import (
	"context"
	"errors"
	"fmt"
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

// RequireSentinel returns the path of redis-sentinel. When it is missing
// the test is skipped with a message, or fails when BLOOMKIT_REQUIRE_REDIS=1
// (CI installs Debian's redis-sentinel with make deps).
func RequireSentinel(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("redis-sentinel")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redistest: redis-sentinel not found (%v), and %s=1 requires it (run 'sudo make deps')", err, RequireEnv)
		}
		t.Skipf("redistest: redis-sentinel not found (%v); skipping (install Debian's redis-sentinel, e.g. 'sudo make deps'; set %s=1 to fail instead)", err, RequireEnv)
	}
	return p
}

// SentinelConfig describes the master a group of sentinels monitors.
type SentinelConfig struct {
	// MasterName is the monitored master's name (default "mymaster").
	MasterName string
	// Master is the master's address, "127.0.0.1:port".
	Master string
	// Quorum is how many sentinels must agree the master is down
	// (default 2).
	Quorum int
	// DownAfter is down-after-milliseconds (default 1 s).
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout (default 3 s). A sentinel does
	// not start a new failover of the same master within twice this
	// time of the last one.
	FailoverTimeout time.Duration
	// AuthPass, when set, is the password the sentinels give the
	// instances (sentinel auth-pass).
	AuthPass string
}

func (c *SentinelConfig) defaults() {
	if c.MasterName == "" {
		c.MasterName = "mymaster"
	}
	if c.Quorum == 0 {
		c.Quorum = 2
	}
	if c.DownAfter == 0 {
		c.DownAfter = time.Second
	}
	if c.FailoverTimeout == 0 {
		c.FailoverTimeout = 3 * time.Second
	}
}

// Sentinel is one running redis-sentinel.
type Sentinel struct {
	// Addr is its address, "127.0.0.1:port".
	Addr string
	// Dir holds its config file (sentinel.conf), which it rewrites.
	Dir string
	// MasterName is the master it monitors.
	MasterName string

	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// StartSentinels runs n redis-sentinels on free loopback ports, each with a
// generated sentinel.conf monitoring cfg.Master, and stops them when the
// test ends.
func StartSentinels(t testing.TB, n int, cfg SentinelConfig) []*Sentinel {
	t.Helper()
	bin := RequireSentinel(t)
	cfg.defaults()
	var out []*Sentinel
	for i := range n {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("sentinel%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		var s *Sentinel
		var err error
		for range 5 { // a free port may be taken before sentinel binds it
			var port int
			if port, err = freePort(); err != nil {
				break
			}
			if s, err = startSentinel(bin, dir, port, cfg); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("redistest: sentinel %d: %v", i, err)
		}
		t.Cleanup(s.Stop)
		out = append(out, s)
	}
	return out
}

// SentinelConf is the sentinel.conf StartSentinels writes for a sentinel
// on port.
func SentinelConf(port int, dir string, cfg SentinelConfig) string {
	cfg.defaults()
	host, mport, _ := net.SplitHostPort(cfg.Master)
	return strings.Join([]string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"daemonize no",
		`logfile ""`,
		"dir " + dir,
		"sentinel resolve-hostnames no",
		fmt.Sprintf("sentinel monitor %s %s %s %d", cfg.MasterName, host, mport, cfg.Quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", cfg.MasterName, cfg.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", cfg.MasterName, cfg.FailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", cfg.MasterName),
	}, "\n") + authPassLine(cfg) + "\n"
}

func authPassLine(cfg SentinelConfig) string {
	if cfg.AuthPass == "" {
		return ""
	}
	return fmt.Sprintf("\nsentinel auth-pass %s %s", cfg.MasterName, cfg.AuthPass)
}

func startSentinel(bin, dir string, port int, cfg SentinelConfig) (*Sentinel, error) {
	conf := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(conf, []byte(SentinelConf(port, dir, cfg)), 0o644); err != nil {
		return nil, err
	}
	s := &Sentinel{
		Addr:       net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Dir:        dir,
		MasterName: cfg.MasterName,
		log:        &syncBuffer{},
		done:       make(chan struct{}),
	}
	s.cmd = exec.Command(bin, conf)
	s.cmd.Dir = dir
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-sentinel: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("redis-sentinel on %s exited during start-up; log:\n%s", s.Addr, s.Log())
		default:
		}
		if err := ping(s.Addr); err == nil {
			return s, nil
		} else if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("redis-sentinel on %s not answering PING: %w; log:\n%s", s.Addr, err, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log returns what the sentinel has logged so far (its events: +sdown,
// +odown, +switch-master, ...).
func (s *Sentinel) Log() string { return s.log.String() }

// Stop stops the sentinel and waits for it.
func (s *Sentinel) Stop() {
	stopProcess(s.cmd, s.done)
}

// Client returns a go-redis client of the sentinel (SENTINEL commands).
func (s *Sentinel) Client() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
}

// Master asks the sentinel for the master's address.
func (s *Sentinel) Master(ctx context.Context) (string, error) {
	c := s.Client()
	defer c.Close()
	a, err := c.GetMasterAddrByName(ctx, s.MasterName).Result()
	if err != nil {
		return "", err
	}
	if len(a) != 2 {
		return "", fmt.Errorf("SENTINEL get-master-addr-by-name answered %v", a)
	}
	return net.JoinHostPort(a[0], a[1]), nil
}

// Ready reports nil when the sentinel sees master as the master, with no
// failover in progress and neither it nor any of replicas down, every
// address of replicas among its replicas, up and linked to the master,
// and others other sentinels: the state in which a failover can start
// and succeed.
func (s *Sentinel) Ready(ctx context.Context, master string, replicas []string, others int) error {
	c := s.Client()
	defer c.Close()
	m, err := c.Master(ctx, s.MasterName).Result()
	if err != nil {
		return fmt.Errorf("SENTINEL MASTER: %w", err)
	}
	if addr := net.JoinHostPort(m["ip"], m["port"]); addr != master {
		return fmt.Errorf("%s: master is %s, want %s", s.Addr, addr, master)
	}
	if m["flags"] != "master" {
		return fmt.Errorf("%s: master flags %q", s.Addr, m["flags"])
	}
	if n, _ := strconv.Atoi(m["num-other-sentinels"]); n < others {
		return fmt.Errorf("%s: knows %d other sentinels, want %d", s.Addr, n, others)
	}
	rs, err := c.Replicas(ctx, s.MasterName).Result()
	if err != nil {
		return fmt.Errorf("SENTINEL REPLICAS: %w", err)
	}
	ok := map[string]bool{}
	for _, r := range rs {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			ok[net.JoinHostPort(r["ip"], r["port"])] = true
		}
	}
	for _, r := range replicas {
		if !ok[r] {
			return fmt.Errorf("%s: replica %s is not listed up and linked (%v)", s.Addr, r, rs)
		}
	}
	return nil
}

// WaitReady waits until every sentinel is Ready.
func WaitReady(ctx context.Context, ss []*Sentinel, master string, replicas []string) error {
	for {
		var err error
		for _, s := range ss {
			if err = s.Ready(ctx, master, replicas, len(ss)-1); err != nil {
				break
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
