package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/server"
	"github.com/redis/go-redis/v9"
)

// startDataServer starts a server keeping its data in dir.
func startDataServer(t *testing.T, dir string) (*server.Server, *redis.Client) {
	t.Helper()
	s, err := server.New(server.Config{Addr: "127.0.0.1:0", Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	t.Cleanup(func() { c.Close() })
	return s, c
}

// TestBackupRestore: bloom backup writes a checked copy holding every
// write acknowledged before it, while snapshots and writes go on (no race
// with the snapshot that removes the one it copies); restored under the
// name it prints, in an empty directory, the server has exactly that
// data; under another name the server refuses to start, saying the name.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	s, c := startDataServer(t, t.TempDir())
	for i := 0; i < 50; i++ {
		if err := c.BFAdd(ctx, "urls", "u"+strconv.Itoa(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CFAdd(ctx, "carts", "c1").Err(); err != nil {
		t.Fatal(err)
	}
	// Snapshots and writes all along, as on a live server.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c.Do(ctx, "BGSAVE")
			c.BFAdd(ctx, "busy", strconv.Itoa(i))
		}
	}()
	work := t.TempDir()
	var out string
	var name string
	for i := 0; i < 3; i++ {
		out = filepath.Join(work, "b"+strconv.Itoa(i)+".bkdb")
		r := bloomIn(t, work, "", "backup", "--addr", s.Addr(), out).want(t, exitOK, "backup while snapshots run")
		m := regexp.MustCompile(`as (dump\.\d+\.bkdb)`).FindStringSubmatch(r.stdout)
		if m == nil || !strings.Contains(r.stdout, "keys") {
			t.Fatalf("backup's output: %q", r.stdout)
		}
		name = m[1]
	}
	close(stop)
	wg.Wait()
	if err := c.BFAdd(ctx, "after", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "*.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Restore under the name printed.
	restored := t.TempDir()
	copyFile(t, out, filepath.Join(restored, name))
	_, rc := startDataServer(t, restored)
	for i := 0; i < 50; i++ {
		if ok, err := rc.BFExists(ctx, "urls", "u"+strconv.Itoa(i)).Result(); err != nil || !ok {
			t.Fatalf("restored: BF.EXISTS urls u%d = %v, %v", i, ok, err)
		}
	}
	if ok, err := rc.CFExists(ctx, "carts", "c1").Result(); err != nil || !ok {
		t.Errorf("restored: CF.EXISTS carts c1 = %v, %v", ok, err)
	}
	if n, _ := rc.Exists(ctx, "after").Result(); n != 0 {
		t.Error("restored: a key written after the backup is there")
	}

	// The operator's mistakes: the backup's own name, or a wrong number.
	gen, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "dump."), ".bkdb"))
	for _, wrong := range []string{"b2.bkdb", "dump.rdb", server.SnapshotName(uint64(gen) + 5)} {
		dir := t.TempDir()
		copyFile(t, out, filepath.Join(dir, wrong))
		_, err := server.New(server.Config{Addr: "127.0.0.1:0", Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("restored as %s: %v (want an error naming %s)", wrong, err, name)
		}
	}
}

// TestBackupRefusesDamage: a damaged snapshot is not copied, and the
// destination is left alone; a server without a data directory is
// refused.
func TestBackupRefusesDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, c := startDataServer(t, dir)
	if err := c.BFAdd(ctx, "urls", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	snap, _, err := newestSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, snap))
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.bkdb")
	if err := os.WriteFile(bad, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(bad)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(t.TempDir(), "out.bkdb")
	if _, err := copyChecked(f, out); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("damaged snapshot: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("damaged snapshot: %s written (%v)", out, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	_ = s

	mem, err := server.New(server.Config{Addr: "127.0.0.1:0", NoPersistence: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Listen(); err != nil {
		t.Fatal(err)
	}
	go mem.Serve()
	defer mem.Close()
	r := bloomIn(t, t.TempDir(), "", "backup", "--addr", mem.Addr(), "x.bkdb")
	if r.code != exitError || !strings.Contains(r.stderr, "no data directory") {
		t.Errorf("backup of a server without persistence: exit %d, %q", r.code, r.stderr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
