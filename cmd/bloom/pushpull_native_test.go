package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/bloomkit/bloomkit/server"
)

// TestPushPullBloomkit: bloomkit files (bloom build's classic and blocked,
// the library's window) pushed into bloom serve become native keys that
// answer as bloom test answers for the file, and pull back byte for byte;
// a key made on the server pulls as a file bloom.Read reads; wrong
// formats and damaged files are refused and leave no key.
func TestPushPullBloomkit(t *testing.T) {
	addr, c := startServe(t)
	ctx := context.Background()
	dir := t.TempDir()
	var words strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&words, "word-%d\n", i)
	}
	os.WriteFile(filepath.Join(dir, "words.txt"), []byte(words.String()), 0o644)
	for _, typ := range []string{"classic", "blocked"} {
		bloomIn(t, dir, "", "build", "--type", typ, "-n", "20000", "-p", "0.01", "-o", typ+".bloom", "words.txt").want(t, 0, "build "+typ)
	}
	w, err := bloom.NewWindowWith(bloom.WindowConfig{Window: time.Hour, Items: 100000, Rate: 0.001, Seed: 77})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		w.Add([]byte(fmt.Sprint("word-", i)))
	}
	var file bytes.Buffer
	w.WriteTo(&file) // 3 generations of 1.2 MB: chunks within arrays
	data := file.Bytes()
	os.WriteFile(filepath.Join(dir, "window.bloom"), data, 0o644)

	for _, typ := range []string{"classic", "blocked", "window"} {
		bloomIn(t, dir, "", "push", "--addr", addr, typ+".bloom", typ).want(t, 0, "push "+typ)
		if got := c.Type(ctx, typ).Val(); got != "BKbloom--" {
			t.Errorf("%s: TYPE %s", typ, got)
		}
		probe := []string{"word-0", "word-999", "word-19999", "nope-1", "nope-2", "nope-3"}
		want := bloomIn(t, dir, "", append([]string{"test", typ + ".bloom"}, probe...)...).want(t, 0, "test").stdout
		args := make([]any, len(probe))
		for i, p := range probe {
			args[i] = p
		}
		res := c.BFMExists(ctx, typ, args...).Val()
		var got strings.Builder
		for i, p := range probe {
			ans := "absent"
			if res[i] {
				ans = "present"
			}
			fmt.Fprintf(&got, "%s\t%s\n", p, ans)
		}
		if got.String() != want {
			t.Errorf("%s: server answers\n%s\nbloom test answers\n%s", typ, got.String(), want)
		}
		bloomIn(t, dir, "", "pull", "--addr", addr, typ, "-o", typ+".pulled").want(t, 0, "pull "+typ)
		a, _ := os.ReadFile(filepath.Join(dir, typ+".bloom"))
		b, _ := os.ReadFile(filepath.Join(dir, typ+".pulled"))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: pulled file (%d bytes) differs from the pushed one (%d bytes)", typ, len(b), len(a))
		}
	}

	// A key made on the server: pulled, bloom.Read reads it.
	c.Do(ctx, "BF.RESERVE", "made", "0.01", "1000", "LAYOUT", "blocked")
	c.BFMAdd(ctx, "made", "x", "y")
	bloomIn(t, dir, "", "pull", "--addr", addr, "made", "-o", "made.bloom").want(t, 0, "pull made")
	f, err := os.Open(filepath.Join(dir, "made.bloom"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tf, err := bloom.Read(f)
	if err != nil || !tf.Test([]byte("x")) {
		t.Errorf("bloom.Read of a pulled key: %v", err)
	}

	// Refusals.
	c.BFAdd(ctx, "rb", "x")
	if r := bloomIn(t, dir, "", "pull", "--addr", addr, "--format", "bloomkit", "rb", "-o", "rb.bloom"); r.code != 2 || !strings.Contains(r.stderr, "--format scandump") {
		t.Errorf("pull --format bloomkit of a RedisBloom key: %d %q", r.code, r.stderr)
	}
	if r := bloomIn(t, dir, "", "push", "--addr", addr, "--format", "scandump", "blocked.bloom", "k2"); r.code != 2 {
		t.Errorf("push --format scandump of a bloomkit file: %d %q", r.code, r.stderr)
	}
	bloomIn(t, dir, "", "build", "--type", "counting", "-n", "100", "-o", "counting.bloom", "words.txt")
	if r := bloomIn(t, dir, "", "push", "--addr", addr, "counting.bloom", "k3"); r.code != 2 || !strings.Contains(r.stderr, "cannot be a server key") {
		t.Errorf("push of a counting filter: %d %q", r.code, r.stderr)
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)/2] ^= 1
	os.WriteFile(filepath.Join(dir, "bad.bloom"), bad, 0o644)
	r := bloomIn(t, dir, "", "push", "--addr", addr, "bad.bloom", "k4")
	if r.code != 2 || !strings.Contains(r.stderr, "CRC") {
		t.Errorf("push of a damaged file: %d %q", r.code, r.stderr)
	}
	if n := c.Exists(ctx, "k2", "k3", "k4", "k4.bloom-load").Val(); n != 0 {
		t.Errorf("refused pushes left %d keys", n)
	}
}

// A window that moves to a new generation while it is pulled (a write
// between two BF.SCANDUMP calls rotates its arrays) is not written as a
// file: the file would pair the old start times with the rotated arrays,
// so that items sat in the wrong generations — forgotten early or kept
// too long. pull says so instead.
func TestPullWindowMovedWhilePulled(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, err := server.New(server.Config{Addr: "127.0.0.1:0", NoPersistence: true, Now: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2})
	t.Cleanup(func() { c.Close() })
	// 4 generations of 2.3 MB: the pull takes several chunks.
	if err := c.Do(ctx, "BF.RESERVE", "w", "0.001", "1000000", "WINDOW", "4s", "SEED", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c.BFAdd(ctx, "w", "old")
	srv, err := dial(ctx, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	chunks := 0
	var file bytes.Buffer
	_, err = pullNative(ctx, srv, "w", &file, func(int) {
		if chunks++; chunks == 3 {
			mu.Lock()
			now = now.Add(time.Second)
			mu.Unlock()
			c.BFAdd(ctx, "w", "new") // moves the window one generation
		}
	})
	if err == nil || !strings.Contains(err.Error(), "a window moved to a new generation") {
		t.Fatalf("pull of a window that moved meanwhile: %v", err)
	}
	// Unchanged, it pulls.
	file.Reset()
	if _, err := pullNative(ctx, srv, "w", &file, func(int) {}); err != nil {
		t.Fatal(err)
	}
	r, err := bloom.Read(&file)
	if err != nil || !r.Test([]byte("old")) || !r.Test([]byte("new")) {
		t.Fatalf("bloom.Read of the pulled window: %v", err)
	}
}

// TestMigrateNative: bloom migrate copies bloomkit keys (blocked and window)
// between two bloom serves exactly — dump, BF.INFO with BF.CARD, answers —
// and, to a server that is not bloom serve, fails on them with the reason.
func TestMigrateNative(t *testing.T) {
	srcAddr, src := startServe(t)
	dstAddr, dst := startServe(t)
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"BF.RESERVE", "n:blocked", "0.01", 10000, "LAYOUT", "blocked"},
		{"BF.RESERVE", "n:window", "0.01", 10000, "WINDOW", "1h"},
	} {
		if err := src.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < 3000; i++ {
			p.BFAdd(ctx, "n:blocked", fmt.Sprint("x", i))
			p.BFAdd(ctx, "n:window", fmt.Sprint("x", i))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := bloomIn(t, dir, "", "migrate", "--samples", "64", srcAddr, dstAddr).want(t, 0, "migrate")
	if !strings.Contains(r.stdout, "verified:  2 of 2") {
		t.Errorf("report:\n%s", r.stdout)
	}
	for _, k := range []string{"n:blocked", "n:window"} {
		if a, b := src.BFCard(ctx, k).Val(), dst.BFCard(ctx, k).Val(); a != b || a < 2900 {
			t.Errorf("%s: BF.CARD %d on SRC, %d on DST", k, a, b)
		}
		if typ := dst.Type(ctx, k).Val(); typ != "BKbloom--" {
			t.Errorf("%s: TYPE on DST %s", k, typ)
		}
	}
	plain := redistest.Start(t)
	r = bloomIn(t, dir, "", "migrate", "--match", "n:blocked", srcAddr, plain.Addr)
	if r.code != 2 || !strings.Contains(r.stdout+r.stderr, "can only be copied to bloom serve") {
		t.Errorf("migrate of a bloomkit key to plain Redis: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A classic or blocked file whose header gives a count (0 for these
// types, which count no keys) is refused before anything is sent, as
// bloom.Read and the server refuse it.
func TestPushNativeCountRefused(t *testing.T) {
	for _, typ := range []string{"classic", "blocked"} {
		var f io.WriterTo
		var err error
		if typ == "classic" {
			f, err = bloom.New(100, 0.01)
		} else {
			f, err = bloom.NewBlocked(100, 0.01)
		}
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		binary.LittleEndian.PutUint64(b[56:], 3)
		binary.LittleEndian.PutUint32(b[72:], crc32.Checksum(b[:72], format.Castagnoli))
		binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], format.Castagnoli))
		sent := 0
		_, err = pushNative(bytes.NewReader(b), func(int64, []byte) error { sent++; return nil })
		if !errors.Is(err, bloom.ErrCorrupt) || sent != 0 {
			t.Errorf("%s, count 3: pushNative: err = %v after %d chunks, want ErrCorrupt before any", typ, err, sent)
		}
	}
}
