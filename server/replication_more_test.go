package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/server/internal/backlog"
	"github.com/redis/go-redis/v9"
)

// dropLink cuts a replica's connection to its master (a network blip).
func dropLink(r *Server) {
	if l := r.currentLink(); l != nil {
		l.mu.Lock()
		if l.conn != nil {
			l.conn.Close()
		}
		l.mu.Unlock()
	}
}

// After a short disconnect the replica continues from its offset
// (+CONTINUE): no second full sync.
func TestReplicationPartialResync(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	r := startReplica(t, m, Config{})
	rc := dialRaw(t, r.Addr())
	mc.do("BF.ADD", "k", "1")
	waitSynced(t, mc, rc)
	dropLink(r)
	mc.do("BF.ADD", "k", "2") // while it is away
	replWait(t, "the link to come back", func() bool { return replInfo(t, rc, "replication", "master_link_status") == "up" })
	waitSynced(t, mc, rc)
	if got := rc.do("BF.EXISTS", "k", "2"); got != ":1" {
		t.Fatalf("write made while the replica was away: %s", got)
	}
	if full, ok := replInfo(t, mc, "stats", "sync_full"), replInfo(t, mc, "stats", "sync_partial_ok"); full != "1" || ok != "1" {
		t.Fatalf("sync_full=%s sync_partial_ok=%s, want 1 and 1", full, ok)
	}
	if !sameData(t, m, r, mc, rc) {
		t.Fatal("replica differs after the partial resync")
	}
}

// PSYNC2: a replica promoted with REPLICAOF NO ONE keeps the old history
// as replid2, so the other replica, and the old master, continue with it
// without a full sync.
func TestReplicationPromotionContinues(t *testing.T) {
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	r1 := startReplica(t, m, Config{})
	r2 := startReplica(t, m, Config{})
	c1, c2 := dialRaw(t, r1.Addr()), dialRaw(t, r2.Addr())
	mc.do("BF.ADD", "k", "1")
	waitSynced(t, mc, c1)
	waitSynced(t, mc, c2)
	oldID := replInfo(t, mc, "replication", "master_replid")
	if got := c1.do("REPLICAOF", "NO", "ONE"); got != "+OK" {
		t.Fatalf("REPLICAOF NO ONE: %s", got)
	}
	if got := replInfo(t, c1, "replication", "master_replid2"); got != oldID {
		t.Fatalf("promoted replica's replid2 = %s, want the old master's %s", got, oldID)
	}
	h, p := hostPort(t, r1)
	if got := c2.do("REPLICAOF", h, p); got != "+OK" {
		t.Fatalf("REPLICAOF: %s", got)
	}
	if got := mc.do("REPLICAOF", h, p); got != "+OK" {
		t.Fatalf("old master REPLICAOF: %s", got)
	}
	c1.do("BF.ADD", "k", "2")
	waitSynced(t, c1, c2)
	waitSynced(t, c1, mc)
	if full, ok := replInfo(t, c1, "stats", "sync_full"), replInfo(t, c1, "stats", "sync_partial_ok"); full != "0" || ok != "2" {
		t.Fatalf("new master: sync_full=%s sync_partial_ok=%s, want 0 and 2", full, ok)
	}
	for _, c := range []*rawConn{c2, mc} {
		if got := c.do("BF.EXISTS", "k", "2"); got != ":1" {
			t.Fatalf("write on the new master not replicated: %s", got)
		}
	}
	if !sameData(t, r1, m, c1, mc) {
		t.Fatal("old master differs from the new one")
	}
}

// Sentinel's failover sends REPLICAOF inside MULTI … EXEC.
func TestReplicaOfInsideMulti(t *testing.T) {
	m := startServer(t, Config{})
	r := startServer(t, Config{})
	mc, rc := dialRaw(t, m.Addr()), dialRaw(t, r.Addr())
	mc.do("SET", "x", "1")
	h, p := hostPort(t, m)
	rc.do("MULTI")
	if got := rc.do("SLAVEOF", h, p); got != "+QUEUED" {
		t.Fatalf("SLAVEOF in MULTI: %s", got)
	}
	if got := rc.do("EXEC"); got != "[+OK]" {
		t.Fatalf("EXEC: %s", got)
	}
	waitSynced(t, mc, rc)
	if got := rc.do("GET", "x"); got != `"1"` {
		t.Fatalf("GET x on the replica: %s", got)
	}
}

// WAIT blocks only its own client, answers the replicas that acknowledged,
// and gives up after its timeout.
func TestWait(t *testing.T) { bothPaths(t, testWait) }

func testWait(t *testing.T, goroutinePerConn bool) {
	m := startServer(t, Config{goroutinePerConn: goroutinePerConn})
	mc, other := dialRaw(t, m.Addr()), dialRaw(t, m.Addr())
	mc.do("SET", "x", "1")
	start := time.Now()
	mc.send("WAIT", "1", "300")
	// INFO's blocked_clients counts a client in WAIT, as Redis's does.
	replWait(t, "WAIT to block its client", func() bool { return replInfo(t, other, "clients", "blocked_clients") == "1" })
	if got := other.do("PING"); got != "+PONG" {
		t.Fatalf("another client during WAIT: %s", got)
	}
	if time.Since(start) > 250*time.Millisecond {
		t.Fatal("another client waited for WAIT")
	}
	if got := mc.read(); got != ":0" {
		t.Fatalf("WAIT without replicas = %s", got)
	}
	if d := time.Since(start); d < 290*time.Millisecond {
		t.Fatalf("WAIT returned after %v, before its timeout", d)
	}
	if got := mc.do("PING"); got != "+PONG" {
		t.Fatalf("after WAIT: %s", got)
	}
	if got := replInfo(t, other, "clients", "blocked_clients"); got != "0" {
		t.Fatalf("blocked_clients after WAIT answered: %s", got)
	}
	r := startReplica(t, m, Config{})
	waitSynced(t, mc, dialRaw(t, r.Addr()))
	mc.do("SET", "x", "2")
	if got := mc.do("WAIT", "1", "0"); got != ":1" {
		t.Fatalf("WAIT 1 0 with a replica = %s", got)
	}
	if got := dialRaw(t, r.Addr()).do("WAIT", "0", "0"); !strings.HasPrefix(got, "-ERR WAIT cannot be used with replica instances") {
		t.Fatalf("WAIT on a replica: %s", got)
	}
}

// min-replicas-to-write refuses writes without enough good replicas.
func TestMinReplicasToWrite(t *testing.T) {
	m := startServer(t, Config{MinReplicasToWrite: 1})
	mc := dialRaw(t, m.Addr())
	if got := mc.do("SET", "x", "1"); got != "-NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("write without replicas: %s", got)
	}
	if got := mc.do("GET", "x"); got != "nil" {
		t.Fatalf("read: %s", got)
	}
	r := startReplica(t, m, Config{})
	waitSynced(t, mc, dialRaw(t, r.Addr()))
	if got := mc.do("SET", "x", "1"); got != "+OK" {
		t.Fatalf("write with a replica: %s", got)
	}
	mc.do("CONFIG", "SET", "min-replicas-to-write", "2")
	if got := mc.do("SET", "x", "1"); got != "-NOREPLICAS Not enough good replicas to write." {
		t.Fatalf("write with 1 of 2 replicas: %s", got)
	}
}

// replica-serve-stale-data no: MASTERDOWN while the link is down.
func TestReplicaServeStaleDataNo(t *testing.T) {
	r := startServer(t, Config{ReplicaServeStaleData: "no", ReplicaOf: "127.0.0.1 1"})
	rc := dialRaw(t, r.Addr())
	if got := rc.do("GET", "x"); got != "-"+errMasterDown {
		t.Fatalf("GET with the link down: %s", got)
	}
	if got := rc.do("ROLE"); !strings.HasPrefix(got, `["slave"`) {
		t.Fatalf("ROLE with the link down: %s", got)
	}
	if got := replInfo(t, rc, "replication", "master_link_status"); got != "down" {
		t.Fatalf("master_link_status = %q", got)
	}
}

// fakeMaster answers a replica's handshake and then sends payload after
// +FULLRESYNC; it returns its address.
func fakeMaster(t *testing.T, payload []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				p := newTestReader(br)
				for {
					args, err := p()
					if err != nil {
						return
					}
					if strings.EqualFold(args[0], "psync") {
						io.WriteString(c, "+FULLRESYNC "+strings.Repeat("a", 40)+" 0\r\n")
						c.Write(payload)
						time.Sleep(200 * time.Millisecond)
						return
					}
					if strings.EqualFold(args[0], "ping") {
						io.WriteString(c, "+PONG\r\n")
					} else {
						io.WriteString(c, "+OK\r\n")
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// newTestReader reads RESP arrays of bulk strings.
func newTestReader(br *bufio.Reader) func() ([]string, error) {
	return func() ([]string, error) {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		args := make([]string, n)
		for i := range args {
			if _, err := br.ReadString('\n'); err != nil {
				return nil, err
			}
			a, err := br.ReadString('\n')
			if err != nil {
				return nil, err
			}
			args[i] = strings.TrimRight(a, "\r\n")
		}
		return args, nil
	}
}

// A master that sends garbage, a truncated snapshot or a Redis RDB gives
// the replica a clear error and a retry, and leaves its keyspace as it was.
func TestReplicaRejectsBadPayloads(t *testing.T) {
	snap := keyspaceImage(t, func() *Server {
		s := startServer(t, Config{NoPersistence: true})
		dialRaw(t, s.Addr()).do("BF.ADD", "k", "x")
		return s
	}())
	corrupt := append([]byte(nil), snap...)
	corrupt[len(corrupt)/2] ^= 0xff
	cases := []struct {
		name, payload, want string
	}{
		{"garbage", "$40\r\n" + strings.Repeat("x", 40), "not a bloomkit snapshot"},
		{"truncated", "$" + strconv.Itoa(len(snap)) + "\r\n" + string(snap[:len(snap)/2]), "truncated"},
		{"corrupt", "$" + strconv.Itoa(len(corrupt)) + "\r\n" + string(corrupt), "checksum"},
		{"redis rdb", "$40\r\nREDIS0011\xfa\x09redis-ver\x057.0.15xxxxxxxxxxxxxxxx", "Redis RDB"},
		{"redis diskless", "$EOF:" + strings.Repeat("b", 40) + "\r\nREDIS0011", "diskless Redis"},
		{"not a payload", "+OK\r\n", "bad sync payload"},
	}
	for _, persist := range []bool{true, false} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/persist=%v", tc.name, persist), func(t *testing.T) {
				addr := fakeMaster(t, []byte(tc.payload))
				r := startServer(t, Config{NoPersistence: !persist, Logger: quietLogger()})
				rc := dialRaw(t, r.Addr())
				rc.do("SET", "mine", "1")
				h, p, _ := net.SplitHostPort(addr)
				rc.do("REPLICAOF", h, p)
				replWait(t, "the sync error", func() bool {
					return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), tc.want)
				})
				if got := rc.do("GET", "mine"); got != `"1"` {
					t.Fatalf("the replica's keyspace changed after a failed sync: GET mine = %s", got)
				}
				if got := replInfo(t, rc, "replication", "master_link_status"); got != "down" {
					t.Fatalf("master_link_status = %s", got)
				}
				rc.do("REPLICAOF", "NO", "ONE")
				if persist {
					// The data directory still holds the old keyspace.
					names, _ := os.ReadDir(r.cfg.Dir)
					for _, n := range names {
						if strings.Contains(n.Name(), "tmp") {
							t.Errorf("left behind: %s", n.Name())
						}
					}
				}
			})
		}
	}
}

// REPLICAOF this server itself: a clear error, no sync.
func TestReplicaOfItself(t *testing.T) {
	r := startServer(t, Config{Logger: quietLogger()})
	rc := dialRaw(t, r.Addr())
	h, p := hostPort(t, r)
	rc.do("REPLICAOF", h, p)
	replWait(t, "the error", func() bool {
		return strings.Contains(replInfo(t, rc, "replication", "master_sync_last_error"), "this server itself")
	})
}

// A replica that never reads does not hold the master up: it is dropped
// at its output limit while the master's clients go on.
func TestStalledReplicaIsDropped(t *testing.T) {
	m := startServer(t, Config{replicaOutLimit: &backlog.Limits{Hard: 1 << 20}})
	mc := dialRaw(t, m.Addr())
	// A replica that sends PSYNC and then reads nothing.
	c, err := net.Dial("tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	io.WriteString(c, "*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
	replWait(t, "the replica to be listed", func() bool { return replInfo(t, mc, "replication", "connected_slaves") == "1" })
	val := strings.Repeat("v", 64<<10)
	var slowest time.Duration
	for i := 0; i < 600 && replInfo(t, mc, "replication", "connected_slaves") == "1"; i++ {
		t0 := time.Now()
		if got := mc.do("SET", "k"+strconv.Itoa(i%10), val); got != "+OK" {
			t.Fatalf("SET: %s", got)
		}
		slowest = max(slowest, time.Since(t0))
	}
	if got := replInfo(t, mc, "replication", "connected_slaves"); got != "0" {
		t.Fatalf("the stalled replica is still connected after 38 MB: connected_slaves=%s", got)
	}
	if slowest > 2*time.Second {
		t.Fatalf("a write waited %v for the stalled replica", slowest)
	}
}

// redis-cli --rdb takes a backup over the network in bloomkit's snapshot
// format: a server started on it (as dump.1.bkdb) has the data.
func TestRedisCliRdbBackup(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	mc.do("BF.ADD", "k", "x")
	mc.do("CF.ADD", "c", "y")
	_, p := hostPort(t, m)
	file := filepath.Join(t.TempDir(), "backup.rdb")
	out, err := exec.Command(cli, "-p", p, "--rdb", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Transfer finished with success") {
		t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
	}
	dir := t.TempDir()
	data, _ := os.ReadFile(file)
	os.WriteFile(filepath.Join(dir, SnapshotName(1)), data, 0o644)
	r := startServer(t, Config{Dir: dir})
	if !bytes.Equal(keyspaceImage(t, m), keyspaceImage(t, r)) {
		t.Fatal("the server started on the backup differs from the master")
	}
}

// redis-cli --replica shows the stream.
func TestRedisCliReplica(t *testing.T) {
	cli := requireTool(t, "redis-cli")
	m := startServer(t, Config{})
	_, p := hostPort(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "-p", p, "--replica")
	var out cliOutput
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	mc := dialRaw(t, m.Addr())
	replWait(t, "redis-cli to sync", func() bool { return replInfo(t, mc, "replication", "connected_slaves") == "1" })
	mc.do("BF.ADD", "streamed", "item")
	replWait(t, "the command in redis-cli's output", func() bool {
		return strings.Contains(out.String(), `"BF.ADD","streamed","item"`)
	})
}

// A replica killed with kill -9 restarts from its own data directory and
// converges with its master again.
func TestReplicaKill9Restart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := bloomBinary(t)
	m := startServer(t, Config{})
	mc := dialRaw(t, m.Addr())
	mh, mp := hostPort(t, m)
	dir, addr := t.TempDir(), freePort(t)
	rep := startBinary(t, bin, dir, addr, "--replicaof", mh+" "+mp)
	ctx := context.Background()
	rcl := redis.NewClient(&redis.Options{Addr: addr})
	defer rcl.Close()
	for i := 0; i < 300; i++ {
		mc.do("BF.ADD", "k", strconv.Itoa(i))
	}
	if got := mc.do("WAIT", "1", "5000"); got != ":1" {
		t.Fatalf("WAIT = %s", got)
	}
	rep.Process.Kill() // SIGKILL
	rep.Wait()
	mc.do("BF.ADD", "k", "after")
	startBinary(t, bin, dir, addr, "--replicaof", mh+" "+mp)
	// Its own data directory first: what it acknowledged is there.
	if n, err := rcl.BFExists(ctx, "k", "299").Result(); err != nil || !n {
		t.Fatalf("after restart, before resync: BF.EXISTS k 299 = %v %v", n, err)
	}
	replWait(t, "the restarted replica to catch up", func() bool {
		ok, _ := rcl.BFExists(ctx, "k", "after").Result()
		return ok
	})
	rc := dialRaw(t, addr)
	waitSynced(t, mc, rc)
	want := mc.do("BF.SCANDUMP", "k", "0")
	if got := rc.do("BF.SCANDUMP", "k", "0"); got != want {
		t.Fatalf("SCANDUMP differs: master %.80s replica %.80s", want, got)
	}
}

// cliOutput is a bytes.Buffer a process writes to while the test reads.
type cliOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *cliOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *cliOutput) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A transaction queued on a master that became a replica meanwhile is
// refused whole at EXEC (its writes would make the replica differ).
func TestExecAfterBecomingReplica(t *testing.T) {
	m := startServer(t, Config{})
	r := startServer(t, Config{})
	rc, other := dialRaw(t, r.Addr()), dialRaw(t, r.Addr())
	rc.do("MULTI")
	rc.do("SET", "x", "1")
	h, p := hostPort(t, m)
	other.do("REPLICAOF", h, p)
	if got := rc.do("EXEC"); got != "-EXECABORT Transaction discarded because of: "+errReadOnly {
		t.Fatalf("EXEC on a replica: %s", got)
	}
}
