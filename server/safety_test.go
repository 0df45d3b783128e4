package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

func TestRequirePass(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, RequirePass: "s3cret"})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"PING", "-NOAUTH Authentication required."},
		{"BF.ADD k v", "-NOAUTH Authentication required."},
		{"HELLO 3", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
		{"AUTH wrong", "-WRONGPASS invalid username-password pair or user is disabled."},
		{"AUTH someone s3cret", "-WRONGPASS invalid username-password pair or user is disabled."},
		{"AUTH s3cret", "+OK"},
		{"BF.ADD k v", ":1"},
	})
	rc2 := dialRaw(t, s.Addr())
	runSteps(t, rc2, []step{
		{"HELLO 3 AUTH default wrong", "-WRONGPASS invalid username-password pair or user is disabled."},
		{"HELLO 3 AUTH default s3cret SETNAME me", `{"server":"redis" "version":"7.2.4" "proto"::3 "id"::2 "mode":"standalone" "role":"master" "modules":[{"name":"bf" "ver"::80000 "path":"(built in)" "args":[]}]}`},
		{"BF.EXISTS k v", "#t"},
		{"CLIENT GETNAME", `"me"`},
	})
	// go-redis with and without the password, both protocols.
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		good := newClient(t, s.Addr(), proto, func(o *redis.Options) { o.Password = "s3cret" })
		if ok, err := good.BFExists(ctx, "k", "v").Result(); err != nil || !ok {
			t.Errorf("RESP%d with password: %v %v", proto, ok, err)
		}
		bad := newClient(t, s.Addr(), proto, func(o *redis.Options) { o.Password = "nope" })
		if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("RESP%d with a wrong password: %v", proto, err)
		}
		none := newClient(t, s.Addr(), proto)
		if err := none.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("RESP%d without password: %v", proto, err)
		}
	}
	if got := dialRaw(t, startServer(t, Config{NoPersistence: true}).Addr()).do("AUTH", "x"); !strings.HasPrefix(got, "-ERR AUTH <password> called without any password configured") {
		t.Errorf("AUTH without requirepass: %s", got)
	}
}

// writeCert makes a CA and a server certificate it signed, for tests
// that need TLS but not client certificates.
func writeCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	ca := newTestCA(t, t.TempDir(), "safety")
	certFile, keyFile, _ = ca.issue("server")
	return certFile, keyFile, ca.Pool
}

func TestTLS(t *testing.T) {
	certFile, keyFile, pool := writeCert(t)
	s := startServer(t, Config{NoPersistence: true, TLSAddr: "127.0.0.1:0", TLSParams: noClientAuth, TLSCert: certFile, TLSKey: keyFile})
	ctx := context.Background()
	c := newClient(t, s.Addr(), 3, func(o *redis.Options) { o.TLSConfig = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"} })
	if ok, err := c.BFAdd(ctx, "k", "v").Result(); err != nil || !ok {
		t.Fatalf("BF.ADD over TLS: %v %v", ok, err)
	}
	plain := newClient(t, s.Addr(), 2, func(o *redis.Options) { o.MaxRetries = -1; o.DialTimeout = time.Second; o.ReadTimeout = time.Second })
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Error("plain-text client accepted by a TLS server")
	}
	if _, err := New(Config{NoPersistence: true, TLSCert: certFile, TLSKey: "/nonexistent"}); err != nil {
		t.Fatalf("New checks TLS at Listen, not New: %v", err)
	}
	bad, _ := New(Config{NoPersistence: true, Addr: "127.0.0.1:0", TLSAddr: "127.0.0.1:0", TLSParams: noClientAuth, TLSCert: certFile, TLSKey: "/nonexistent", Logger: testLogger(t)})
	if err := bad.Listen(); err == nil {
		t.Error("Listen with a missing key succeeded")
	}
}

func TestMaxMemory(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 1 << 20})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		// (0.01, 10M) needs 13 MB: refused, nothing created.
		{"BF.RESERVE huge 0.01 10000000", "-ERR Insufficient memory to create filter"},
		{"EXISTS huge", ":0"},
		{"CF.RESERVE hugecf 100000000", "-ERR Insufficient memory to create filter"},
		{"BF.INSERT huge2 CAPACITY 100000000 ITEMS a", "-ERR Insufficient memory to create filter"},
		{"BF.RESERVE ok 0.01 100000", "+OK"},
		{"BF.RESERVE ok2 0.01 700000", "-ERR Insufficient memory to create filter"},
		{"BF.LOADCHUNK big 1 x", "-ERR received bad data"},
	})
	if got := rc.do("DBSIZE"); got != ":1" {
		t.Errorf("DBSIZE %s", got)
	}
	// A forged header asking for 1 TB is refused without allocating.
	hdr := make([]byte, 20+53)
	copy(hdr, []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 2, 0, 0, 0})
	if got := rc.do("BF.LOADCHUNK", "forged", "1", string(hdr)); got != "-ERR received bad data" {
		t.Errorf("forged header: %s", got)
	}
	info := rc.do("INFO", "memory")
	if !strings.Contains(info, "maxmemory:1048576") {
		t.Errorf("INFO memory: %s", info)
	}
}

// The server refuses a BF growth that would pass maxmemory.
func TestMaxMemoryGrowth(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxMemory: 64 << 10})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.RESERVE", "g", "0.01", "1000", "EXPANSION", "64")
	args := []string{"BF.MADD", "g"}
	for i := 0; i < 1100; i++ {
		args = append(args, "item"+itoa(int64(i)))
	}
	got := rc.do(args...)
	if !strings.HasSuffix(got, "-ERR problem inserting into filter]") {
		t.Fatalf("growth past maxmemory: %.200s", got[len(got)-200:])
	}
	if got := rc.do("BF.INFO", "g", "FILTERS"); got != "[:1]" {
		t.Errorf("filters after refused growth: %s", got)
	}
}

func TestRequestLimits(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MaxArgs: 8, MaxBulk: 1024})
	rc := dialRaw(t, s.Addr())
	if got := rc.do("BF.MADD", "k", "a", "b"); got != "[:1 :1]" {
		t.Fatal(got)
	}
	args := []string{"BF.MADD", "k"}
	for i := 0; i < 10; i++ {
		args = append(args, "x")
	}
	if got := rc.do(args...); got != "-ERR Protocol error: invalid multibulk length" {
		t.Errorf("too many args: %s", got)
	}
	rc2 := dialRaw(t, s.Addr())
	if got := rc2.do("BF.ADD", "k", strings.Repeat("x", 2000)); got != "-ERR Protocol error: invalid bulk length" {
		t.Errorf("too big arg: %s", got)
	}
	// The connection is closed after a protocol error.
	rc2.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := rc2.r.ReadByte(); err != io.EOF {
		t.Errorf("connection still open: %v", err)
	}
	// Other clients are unaffected.
	if got := dialRaw(t, s.Addr()).do("BF.EXISTS", "k", "a"); got != ":1" {
		t.Errorf("after limits: %s", got)
	}
}

func TestExpiry(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	s := startServer(t, Config{NoPersistence: true, Now: clock})
	rc := dialRaw(t, s.Addr())
	runSteps(t, rc, []step{
		{"BF.ADD a x", ":1"},
		{"EXPIRE a 10", ":1"},
		{"EXPIRE a 20 NX", ":0"},
		{"EXPIRE a 20 GT", ":1"},
		{"EXPIRE a 5 LT", ":1"},
		{"TTL a", ":5"},
		{"PTTL a", ":5000"},
		{"CF.ADD c x", ":1"},
		{"PEXPIREAT c 1000003000", ":1"},
	})
	s.db.Lock()
	now = now.Add(4 * time.Second)
	s.db.Unlock()
	runSteps(t, rc, []step{
		{"EXISTS a c", ":1"},
		{"BF.EXISTS a x", ":1"},
		{"DBSIZE", ":1"}, // c expired (PEXPIREAT +3s) and active expiry removed it
	})
	s.db.Lock()
	now = now.Add(2 * time.Second)
	s.db.Unlock()
	// Active expiry removes it without anyone touching the key.
	poll.Until(t, 5*time.Second, func() error {
		s.db.Lock()
		n := s.db.Len()
		s.db.Unlock()
		if n != 0 {
			return fmt.Errorf("expired keys not removed: %d left", n)
		}
		return nil
	})
	runSteps(t, rc, []step{{"BF.EXISTS a x", ":0"}, {"TTL a", ":-2"}})
	if !strings.Contains(rc.do("INFO", "stats"), "expired_keys:2") {
		t.Error("INFO stats lacks expired_keys:2")
	}
}

func TestMetricsAndHealth(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true, MetricsAddr: "127.0.0.1:0", MetricsKeys: 100})
	rc := dialRaw(t, s.Addr())
	rc.do("BF.MADD", "urls", "a", "b", "c")
	rc.do("CF.ADD", "c", "x")
	rc.do("BF.RESERVE", "urls", "x", "y")
	get := func(path string) string {
		resp, err := http.Get("http://" + s.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		return string(b)
	}
	if h := get("/healthz"); h != "ok\n" {
		t.Errorf("healthz %q", h)
	}
	m := get("/metrics")
	for _, want := range []string{
		`bloomkit_commands_total{cmd="bf.madd"} 1`,
		`bloomkit_command_errors_total{cmd="bf.reserve"} 1`,
		`bloomkit_command_duration_seconds_bucket{cmd="cf.add",le="+Inf"} 1`,
		`bloomkit_keys 2`,
		`bloomkit_filter_items{key="urls",type="bloom"} 3`,
		`bloomkit_filter_fill_ratio{key="c",type="cuckoo"} 0.0009765625`,
		`bloomkit_filter_estimated_fpr{key="urls",type="bloom"}`,
		`bloomkit_memory_used_bytes`,
		`bloomkit_connected_clients 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// The per-command histogram /metrics exports puts each duration in the
// first bucket that holds it, cumulatively, with the sum in seconds.
func TestCommandLatencyHistogram(t *testing.T) {
	s := startServer(t, Config{NoPersistence: true})
	cmd, _ := lookupCommand([]byte("bf.add"))
	r := &Reply{}
	s.db.Lock()
	for _, d := range []time.Duration{500 * time.Nanosecond, time.Microsecond, 3 * time.Microsecond, 2 * time.Second} {
		s.stats.executedLocked(cmd, d, r)
	}
	s.db.Unlock()
	r.Error("ERR the command failed") // counted as an error
	s.stats.rejected(cmd, 7*time.Millisecond, r)
	got := s.tallies()[cmd.idx]
	want := cmdTally{calls: 5, errs: 1, sum: 2*time.Second + 7*time.Millisecond + 4500*time.Nanosecond}
	want.buckets[0], want.buckets[1], want.buckets[8] = 2, 1, 1 // ≤1µs, ≤5µs, ≤10ms; 2 s above every bound
	if got != want {
		t.Fatalf("tally %+v, want %+v", got, want)
	}
	ch := make(chan prometheus.Metric, 4*len(commandList)+8)
	(&commandCollector{s: s}).Collect(ch)
	close(ch)
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		if h := pb.GetHistogram(); h != nil && pb.GetLabel()[0].GetValue() == "bf.add" {
			cum := []uint64{2, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4}
			for i, b := range h.GetBucket() {
				if b.GetCumulativeCount() != cum[i] || b.GetUpperBound() != latencyBounds[i].Seconds() {
					t.Errorf("bucket %d: le=%g count %d, want le=%g count %d", i, b.GetUpperBound(), b.GetCumulativeCount(), latencyBounds[i].Seconds(), cum[i])
				}
			}
			if h.GetSampleCount() != 5 || math.Abs(h.GetSampleSum()-want.sum.Seconds()) > 1e-9 {
				t.Errorf("count %d sum %g", h.GetSampleCount(), h.GetSampleSum())
			}
			return
		}
	}
	t.Fatal("no histogram for bf.add")
}

// Close right after Serve starts: Serve's background goroutine is added
// to the wait group only if Close has not begun waiting (the race
// detector flagged an Add concurrent with Close's Wait here).
func TestCloseWhileServeStarts(t *testing.T) {
	for i := 0; i < 50; i++ {
		s, err := New(Config{NoPersistence: true, Addr: "127.0.0.1:0", Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Listen(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Serve() }()
		for j := 0; j < i%20; j++ {
			runtime.Gosched() // vary how far Serve gets
		}
		s.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
