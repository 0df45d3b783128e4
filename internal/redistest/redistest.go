// Package redistest starts throw-away Redis servers for tests: a single
// redis-server (Start) or a real three-master Redis Cluster (StartCluster),
// each on free loopback ports with its data in t.TempDir(), stopped by
// t.Cleanup.
//
// When redis-server or redis-cli is not installed the test is skipped with a
// message saying how to install them, unless the environment variable
// BLOOMKIT_REQUIRE_REDIS=1 is set, in which case it fails: CI sets it so that
// the Redis tests can never be skipped silently (see Require).
package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that turns a missing redis-server
// from a skip into a failure.
const RequireEnv = "BLOOMKIT_REQUIRE_REDIS"

// Binaries holds the paths of the Redis programs the tests run.
type Binaries struct {
	Server string // redis-server
	CLI    string // redis-cli
}

// Require returns the paths of redis-server and redis-cli. When either is
// missing it skips the test, or fails it when BLOOMKIT_REQUIRE_REDIS=1.
func Require(t testing.TB) Binaries {
	t.Helper()
	b, err := lookBinaries()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redistest: %v, and %s=1 requires it (run 'sudo make deps')", err, RequireEnv)
		}
		t.Skipf("redistest: %v; skipping (install redis-server and redis-tools, e.g. 'sudo make deps'; set %s=1 to fail instead)", err, RequireEnv)
	}
	return b
}

// ModuleEnv names the RedisBloom module (redisbloom.so) that tests load
// into redis-server to compare with the real RedisBloom; Debian's
// redis-server has none built in.
const ModuleEnv = "BLOOMKIT_REDISBLOOM_MODULE"

// RequireModuleEnv turns a missing module from a skip into a failure.
const RequireModuleEnv = "BLOOMKIT_REQUIRE_REDISBLOOM"

// RedisBloomModule returns the path of the RedisBloom module given by
// $BLOOMKIT_REDISBLOOM_MODULE. Without one the test is skipped with a
// message, or fails when BLOOMKIT_REQUIRE_REDISBLOOM=1.
func RedisBloomModule(t testing.TB) string {
	t.Helper()
	path := os.Getenv(ModuleEnv)
	missing := ""
	if path == "" {
		missing = ModuleEnv + " is not set"
	} else if _, err := os.Stat(path); err != nil {
		missing = err.Error()
	}
	if missing != "" {
		if os.Getenv(RequireModuleEnv) == "1" {
			t.Fatalf("redistest: no RedisBloom module (%s), and %s=1 requires it", missing, RequireModuleEnv)
		}
		t.Skipf("redistest: no RedisBloom module (%s); skipping. Build redisbloom.so and set %s to its path to run this test", missing, ModuleEnv)
	}
	return path
}

func lookBinaries() (Binaries, error) {
	var b Binaries
	var err error
	if b.Server, err = exec.LookPath("redis-server"); err != nil {
		return b, fmt.Errorf("redis-server not found: %w", err)
	}
	if b.CLI, err = exec.LookPath("redis-cli"); err != nil {
		return b, fmt.Errorf("redis-cli not found: %w", err)
	}
	return b, nil
}

// Server is one running redis-server.
type Server struct {
	// Addr is the server's address, "127.0.0.1:port".
	Addr string
	// Dir is the server's working directory (a t.TempDir()).
	Dir string

	bin  Binaries
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// Start runs a fresh redis-server on a free loopback port, without
// persistence, and stops it when the test ends. extra arguments are passed
// to redis-server as "--name value" pairs, e.g. "--maxmemory", "10mb".
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	b := Require(t)
	s, err := start(t, b, t.TempDir(), extra...)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return s
}

// Options returns go-redis options that connect to the server.
func (s *Server) Options() *redis.Options {
	return &redis.Options{Addr: s.Addr}
}

// Client returns a go-redis client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(s.Options())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// CLI runs redis-cli against the server with args and returns its output.
func (s *Server) CLI(ctx context.Context, args ...string) (string, error) {
	host, port, _ := net.SplitHostPort(s.Addr)
	out, err := exec.CommandContext(ctx, s.bin.CLI, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Log returns what the server has written to its log so far.
func (s *Server) Log() string { return s.log.String() }

// Stop stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it.
// It is called by t.Cleanup; calling it earlier, to test a client's
// reaction to a lost server, is allowed.
func (s *Server) Stop() {
	stopProcess(s.cmd, s.done)
}

// stopProcess stops a process this package started (SIGINT, then
// SIGKILL after 5 s) and waits until done is closed; a stopped one is
// left alone.
func stopProcess(cmd *exec.Cmd, done <-chan struct{}) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// portMu serialises port picking within the test binary, so two servers
// started in parallel do not pick the same port.
var portMu sync.Mutex

// freePort returns a loopback port that is free, and whose cluster bus port
// (port + 10000) is free too.
func freePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	for range 200 {
		p := 20000 + rand.IntN(25000)
		ok := true
		var ls []net.Listener
		for _, q := range []int{p, p + 10000} {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			_ = l.Close()
		}
		if ok {
			return p, nil
		}
	}
	return 0, errors.New("no free loopback port found")
}

func start(t testing.TB, b Binaries, dir string, extra ...string) (*Server, error) {
	var lastErr error
	// A port found free may be taken before redis binds it: try a few.
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := startOn(t, b, dir, port, extra...)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startOn(t testing.TB, b Binaries, dir string, port int, extra ...string) (*Server, error) {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
	}
	args = append(args, extra...)
	s := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Dir:  dir,
		bin:  b,
		log:  &syncBuffer{},
		done: make(chan struct{}),
	}
	s.cmd = exec.Command(b.Server, args...)
	s.cmd.Dir = dir
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting redis-server: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(10 * time.Second); err != nil {
		s.Stop()
		return nil, fmt.Errorf("redis-server on %s: %w; log:\n%s", s.Addr, err, s.Log())
	}
	t.Cleanup(s.Stop)
	return s, nil
}

// waitReady waits until the server answers PING.
func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-s.done:
			return errors.New("exited during start-up")
		default:
		}
		if err := ping(s.Addr); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("not answering PING after %v: %w", limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ping sends an inline PING and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// Cluster is a running Redis Cluster of three masters and no replicas.
type Cluster struct {
	// Nodes are the masters, in the order of Addrs.
	Nodes []*Server
	// Addrs are the nodes' addresses, the seed list for a cluster client.
	Addrs []string

	bin Binaries
}

// StartCluster runs three cluster-enabled redis-servers on free loopback
// ports, joins them with `redis-cli --cluster create --cluster-yes` (16384
// slots split in three ranges) and waits until every node reports
// cluster_state:ok. The nodes are stopped when the test ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return StartClusterWith(t)
}

// StartClusterWith is StartCluster with extra redis-server arguments for
// every node (e.g. "--loadmodule", RedisBloomModule(t)).
func StartClusterWith(t testing.TB, extra ...string) *Cluster {
	t.Helper()
	b := Require(t)
	c := &Cluster{bin: b}
	for i := range 3 {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s, err := start(t, b, dir, append([]string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
			"--cluster-require-full-coverage", "yes"}, extra...)...)
		if err != nil {
			t.Fatalf("redistest: cluster node %d: %v", i, err)
		}
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, b.CLI, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitOK(ctx); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// Options returns go-redis cluster options with the nodes as seeds.
func (c *Cluster) Options() *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: append([]string(nil), c.Addrs...)}
}

// Client returns a go-redis cluster client, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	cl := redis.NewClusterClient(c.Options())
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// WaitOK waits until every node reports cluster_state:ok and agrees on
// the owner of every slot (a client that asks any node then finds the
// same layout).
func (c *Cluster) WaitOK(ctx context.Context) error {
	for {
		err := c.check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) check(ctx context.Context) error {
	var first string
	for _, n := range c.Nodes {
		cl := redis.NewClient(n.Options())
		info, err := cl.ClusterInfo(ctx).Result()
		_ = cl.Close()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", n.Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state is not ok", n.Addr)
		}
		slots, err := c.slotOwners(ctx, n)
		if err != nil {
			return err
		}
		if first == "" {
			first = slots
		} else if slots != first {
			return fmt.Errorf("%s disagrees on slot owners", n.Addr)
		}
	}
	return nil
}

// slotOwners returns n's view of the slot ranges and their masters as a
// comparable string.
func (c *Cluster) slotOwners(ctx context.Context, n *Server) (string, error) {
	cl := redis.NewClient(n.Options())
	defer cl.Close()
	out, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("CLUSTER NODES on %s: %w", n.Addr, err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 || !strings.Contains(f[2], "master") {
			continue
		}
		var slots []string
		for _, s := range f[8:] {
			if !strings.HasPrefix(s, "[") { // skip migrating/importing markers
				slots = append(slots, s)
			}
		}
		lines = append(lines, f[0]+" "+strings.Join(slots, ","))
	}
	slices.Sort(lines)
	return strings.Join(lines, ";"), nil
}

// NodeID returns the cluster node id of node i.
func (c *Cluster) NodeID(ctx context.Context, i int) (string, error) {
	cl := redis.NewClient(c.Nodes[i].Options())
	defer cl.Close()
	id, err := cl.ClusterMyID(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("CLUSTER MYID on %s: %w", c.Nodes[i].Addr, err)
	}
	return id, nil
}

// SlotRanges returns the slot ranges node i owns, as [first, last] pairs.
func (c *Cluster) SlotRanges(ctx context.Context, i int) ([][2]int, error) {
	id, err := c.NodeID(ctx, i)
	if err != nil {
		return nil, err
	}
	cl := redis.NewClient(c.Nodes[i].Options())
	defer cl.Close()
	out, err := cl.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", c.Nodes[i].Addr, err)
	}
	var ranges [][2]int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 || f[0] != id {
			continue
		}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			a, b, found := strings.Cut(s, "-")
			if !found {
				b = a
			}
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("parsing slot range %q of node %d", s, i)
			}
			ranges = append(ranges, [2]int{lo, hi})
		}
	}
	return ranges, nil
}

// Owner returns the index of the node that owns slot, in node 0's view.
func (c *Cluster) Owner(ctx context.Context, slot int) (int, error) {
	for i := range c.Nodes {
		r, err := c.SlotRanges(ctx, i)
		if err != nil {
			return -1, err
		}
		for _, r := range r {
			if slot >= r[0] && slot <= r[1] {
				return i, nil
			}
		}
	}
	return -1, fmt.Errorf("no node owns slot %d", slot)
}

// Reshard moves n slots from node from to node to with
// `redis-cli --cluster reshard ... --cluster-yes`, which migrates the keys
// of each slot with MIGRATE while clients keep running, then waits until
// the nodes agree. redis-cli takes the slots from the low end of the source
// node's ranges.
func (c *Cluster) Reshard(ctx context.Context, from, to, n int) (string, error) {
	fromID, err := c.NodeID(ctx, from)
	if err != nil {
		return "", err
	}
	toID, err := c.NodeID(ctx, to)
	if err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, c.bin.CLI, "--cluster", "reshard", c.Addrs[from],
		"--cluster-from", fromID, "--cluster-to", toID,
		"--cluster-slots", strconv.Itoa(n), "--cluster-yes").CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli --cluster reshard: %w\n%s", err, out)
	}
	return string(out), c.WaitOK(ctx)
}

// syncBuffer is a bytes.Buffer safe for the server's output goroutines and
// a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Port is the server's TCP port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// StartAt runs redis-server on the given port with its working directory
// dir (made if missing): a server restarted where an earlier one ran, or
// one whose port must be known before it starts. extra as for Start.
func StartAt(t testing.TB, dir string, port int, extra ...string) (*Server, error) {
	t.Helper()
	b := Require(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return startOn(t, b, dir, port, extra...)
}

// FreePort returns a loopback port that is free now (and whose port +
// 10000 is free too), for a server that must know its port in advance.
func FreePort() (int, error) { return freePort() }
