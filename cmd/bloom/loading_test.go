package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/redis/go-redis/v9"
)

// writeBigLog writes generation 1's append-only log by its documented
// format (docs/server-internals.md): n records BF.ADD f<i%keys> i<i>.
// Replaying it takes long enough to watch the load from outside.
func writeBigLog(t *testing.T, dir string, n, keys int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "appendonly.1.aof"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	tab := crc32.MakeTable(crc32.Castagnoli)
	head := append([]byte("BKAOF002"), binary.LittleEndian.AppendUint64(nil, 1)...)
	w.Write(binary.LittleEndian.AppendUint32(head, crc32.Checksum(head, tab)))
	var payload, rec []byte
	for i := range n {
		args := [][]byte{[]byte("BF.ADD"), []byte("f" + strconv.Itoa(i%keys)), []byte("i" + strconv.Itoa(i))}
		payload = append(payload[:0], 1)
		payload = binary.LittleEndian.AppendUint32(payload, uint32(len(args)))
		for _, a := range args {
			payload = binary.LittleEndian.AppendUint32(payload, uint32(len(a)))
			payload = append(payload, a...)
		}
		rec = binary.LittleEndian.AppendUint32(rec[:0], uint32(len(payload)))
		rec = binary.LittleEndian.AppendUint32(rec, crc32.Checksum(payload, tab))
		rec = binary.LittleEndian.AppendUint32(rec, crc32.Checksum(rec, tab))
		w.Write(rec)
		w.Write(payload)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// loadingServe starts `bloom serve` on data and returns it with its
// address, metrics address and the time it was started.
func loadingServe(t *testing.T, data string) (*exec.Cmd, string, string, *strings.Builder) {
	t.Helper()
	addr, maddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "serve", "--addr", addr, "--dir", data, "--metrics-addr", maddr, "--log-level", "warn")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, addr, maddr, &log
}

// loadingKeys is how many filters the test's log fills.
const loadingKeys = 1000

// loadingRecords is the size of the test's log: about 45 MB, which takes
// more than a second to replay. Under -race the binary is built with the
// race detector too and replays about eight times slower: a fifth of the
// log takes longer there than the whole one without, at a fifth of the CPU.
func loadingRecords() int {
	if raceEnabled {
		return 200_000
	}
	return 1_000_000
}

// The real binary answers while it loads a large log, as redis-server
// does: redis-cli and go-redis connect at once, PING and BF.ADD get
// LOADING, INFO shows loading:1 and growing progress, /livez is 200 and
// /readyz 503; once loaded every item is there. SIGKILL and SIGTERM
// during the load lose nothing.
func TestServeAnswersWhileLoading(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and replays a 45 MB log")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	data := filepath.Join(t.TempDir(), "data")
	records := loadingRecords()
	writeBigLog(t, data, records, loadingKeys)
	ctx := context.Background()

	cmd, addr, maddr, log := loadingServe(t, data)
	start := time.Now()
	host, port, _ := net.SplitHostPort(addr)
	rcli := func(args ...string) string {
		out, _ := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	var first string
	poll.True(t, 20*time.Second, "a first answer", func() bool {
		first = rcli("PING")
		return strings.Contains(first, "LOADING") || first == "PONG"
	})
	firstAnswer := time.Since(start)
	if !strings.Contains(first, "LOADING Redis is loading the dataset in memory") {
		t.Fatalf("first answer %q after %v: the load was over before the server answered (make the log larger)", first, firstAnswer)
	}
	// bloom ping (the image's health check): a loading server is alive;
	// --ready wants PONG.
	if r := bloomIn(t, t.TempDir(), "", "ping", "--addr", addr, "--ready"); r.code != exitError || !strings.Contains(r.stderr, "LOADING") {
		t.Errorf("bloom ping --ready while loading: exit %d %q", r.code, r.stderr)
	}
	if r := bloomIn(t, t.TempDir(), "", "ping", "--addr", addr); r.code != 0 || !strings.HasPrefix(r.stdout, "loading: ") {
		t.Errorf("bloom ping while loading: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got := rcli("BF.ADD", "f1", "new"); !strings.Contains(got, "LOADING") {
		t.Errorf("redis-cli BF.ADD while loading: %q", got)
	}
	info := rcli("INFO", "persistence")
	if !strings.Contains(info, "loading:1") || !strings.Contains(info, "loading_loaded_bytes:") {
		t.Errorf("INFO persistence while loading:\n%s", info)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
	defer c.Close()
	if err := c.Do(ctx, "BF.EXISTS", "f1", "i1").Err(); err == nil || !strings.HasPrefix(err.Error(), "LOADING") {
		t.Errorf("go-redis BF.EXISTS while loading: %v", err)
	}
	loadedBytes := func() int64 {
		s, _ := c.Info(ctx, "persistence").Result()
		for _, l := range strings.Split(s, "\r\n") {
			if v, ok := strings.CutPrefix(l, "loading_loaded_bytes:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return -1
	}
	b0 := loadedBytes()
	poll.True(t, 20*time.Second, "loading_loaded_bytes to grow", func() bool {
		b := loadedBytes()
		return b > b0 || b == -1
	})
	probe := func(path string) int {
		resp, err := http.Get("http://" + maddr + path)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := probe("/livez"); code != 200 {
		t.Errorf("/livez while loading: %d", code)
	}
	if code := probe("/readyz"); code != 503 && c.Ping(ctx).Err() != nil {
		t.Errorf("/readyz while loading: %d", code)
	}
	poll.True(t, 120*time.Second, "PONG", func() bool { return c.Ping(ctx).Val() == "PONG" })
	loaded := time.Since(start)
	if code := probe("/readyz"); code != 200 {
		t.Errorf("/readyz once loaded: %d", code)
	}
	t.Logf("%d records (%d bytes): first answer after %v, loaded after %v", records, logBytes(t, data), firstAnswer.Round(time.Millisecond), loaded.Round(time.Millisecond))
	check := func(c *redis.Client) {
		t.Helper()
		for _, i := range []int{0, 1, records / 2, records - 1} {
			if n, err := c.Do(ctx, "BF.EXISTS", "f"+strconv.Itoa(i%loadingKeys), "i"+strconv.Itoa(i)).Int(); err != nil || n != 1 {
				t.Fatalf("item %d: %d %v", i, n, err)
			}
		}
		if n, err := c.DBSize(ctx).Result(); err != nil || n != loadingKeys {
			t.Fatalf("DBSIZE %d %v", n, err)
		}
	}
	check(c)
	if code := stopServe(t, cmd, syscall.SIGKILL); code != -1 {
		t.Logf("exit %d", code)
	}

	// Killed during the load (SIGKILL, then SIGTERM): nothing is lost,
	// nothing is saved over the files.
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		cmd, addr, _, log2 := loadingServe(t, data)
		c2 := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
		poll.True(t, 20*time.Second, "LOADING", func() bool {
			err := c2.Ping(ctx).Err()
			return err != nil && strings.HasPrefix(err.Error(), "LOADING")
		})
		c2.Close()
		code := stopServe(t, cmd, sig)
		if sig == syscall.SIGTERM && code != 0 {
			t.Errorf("SIGTERM while loading: exit %d\n%s", code, log2.String())
		}
		if sig == syscall.SIGTERM && !strings.Contains(log2.String(), "nothing was saved") {
			t.Errorf("SIGTERM while loading: log\n%s", log2.String())
		}
	}
	_, addr3, _, _ := loadingServe(t, data)
	c3 := redis.NewClient(&redis.Options{Addr: addr3, Protocol: 2, MaxRetries: -1})
	defer c3.Close()
	poll.True(t, 120*time.Second, "PONG", func() bool { return c3.Ping(ctx).Val() == "PONG" })
	check(c3)
	_ = log
}

// stopServe sends sig to a bloom serve and returns its exit code (-1:
// killed by the signal).
func stopServe(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) int {
	t.Helper()
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("bloom serve: %v", err)
	return 0
}

func logBytes(t *testing.T, data string) int64 {
	t.Helper()
	var n int64
	logs, _ := filepath.Glob(filepath.Join(data, "*"))
	for _, l := range logs {
		if st, err := os.Stat(l); err == nil {
			n += st.Size()
		}
	}
	return n
}

// A damaged log still stops bloom serve at start-up, with the error and
// exit status it had when the data was loaded before listening.
func TestServeDamagedLogStops(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	writeBigLog(t, data, 1000, 10)
	path := filepath.Join(data, "appendonly.1.aof")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := bloomIn(t, t.TempDir(), "", "serve", "--addr", freeAddr(t), "--dir", data, "--log-level", "error")
	if r.code != exitError || !strings.Contains(r.stderr, "bloom serve: server: "+path+" is damaged at offset") || !strings.Contains(r.stderr, "refusing to start with a partial log") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// supervised systemd: READY=1 comes once the data is loaded (a STATUS
// before it says the server is loading), as redis-server sends it.
func TestServeReadyAfterLoad(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Skipf("no unixgram sockets here: %v", err)
	}
	defer ln.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	data := filepath.Join(dir, "data")
	writeBigLog(t, data, 200_000, 100)
	addr := freeAddr(t)
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- runServe([]string{"--addr", addr, "--dir", data, "--supervised", "systemd", "--log-level", "warn"}, nil, io.Discard, &stderr)
	}()
	next := func() string {
		t.Helper()
		buf := make([]byte, 512)
		ln.SetReadDeadline(time.Now().Add(60 * time.Second))
		n, _, err := ln.ReadFromUnix(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	if got := next(); !strings.HasPrefix(got, "STATUS=loading") {
		t.Fatalf("first notification %q, want a loading status", got)
	}
	if got := next(); !strings.HasPrefix(got, "READY=1\n") {
		t.Fatalf("notification %q, want READY=1", got)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1})
	defer c.Close()
	if v, err := c.Ping(context.Background()).Result(); err != nil || v != "PONG" {
		t.Fatalf("PING at READY=1: %q %v (READY before the data was loaded)", v, err)
	}
	if n, err := c.DBSize(context.Background()).Result(); err != nil || n != 100 {
		t.Fatalf("DBSIZE at READY=1: %d %v", n, err)
	}
	temps.Lock()
	hook := temps.hook
	temps.Unlock()
	hook <- syscall.SIGTERM
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}
