package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/internal/redistest"
)

// TestMove moves a Redis server that a client keeps writing to onto
// bloom serve with bloom move. The client writes to Redis until a write
// is refused (Redis refuses writes once the move is done), then to bloom
// serve: every write either server acknowledged is on bloom serve at the
// end, with the value of the last acknowledged write to its key.
func TestMove(t *testing.T) {
	var extra []string
	withModule := false
	if m := redistestModule(); m != "" {
		extra, withModule = append(extra, "--loadmodule", m), true
	}
	r := redistest.Start(t, append([]string{"--repl-diskless-sync-delay", "0"}, extra...)...)
	rc := r.Client(t)
	ctx := context.Background()
	pipe := rc.Pipeline()
	for i := range 5000 {
		pipe.Set(ctx, "k"+strconv.Itoa(i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if withModule {
		for i := range 200 {
			rc.Do(ctx, "BF.ADD", "bf"+strconv.Itoa(i%20), "item"+strconv.Itoa(i))
		}
	}
	toAddr, to := startServe(t)

	// The writer: SET and DEL on Redis until refused, then on bloom serve.
	acked := map[string]string{} // key → last acknowledged value ("" deleted)
	var mu sync.Mutex
	stop := make(chan struct{})
	switched := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var writes, onTarget int
	go func() {
		defer wg.Done()
		c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
		defer c.Close()
		rnd := rand.New(rand.NewPCG(7, 8))
		target := false
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			k := "k" + strconv.Itoa(rnd.IntN(6000))
			v := strconv.Itoa(1_000_000 + n)
			for {
				var err error
				if n%5 == 4 {
					err = c.Del(ctx, k).Err()
				} else {
					err = c.Set(ctx, k, v, 0).Err()
				}
				if err == nil {
					mu.Lock()
					if n%5 == 4 {
						acked[k] = ""
					} else {
						acked[k] = v
					}
					writes++
					if target {
						onTarget++
					}
					mu.Unlock()
					break
				}
				if target || !strings.HasPrefix(err.Error(), "READONLY") {
					t.Errorf("write %d to %s: %v", n, map[bool]string{false: "Redis", true: "bloom serve"}[target], err)
					return
				}
				// Redis refuses writes: the move is done; the same
				// write goes to bloom serve.
				c.Close()
				c = redis.NewClient(&redis.Options{Addr: toAddr, MaxRetries: -1})
				target = true
				close(switched)
			}
		}
	}()
	dir := t.TempDir()
	start := time.Now()
	res := bloomIn(t, dir, "", "move", "--from", r.Addr, "--to", toAddr, "--pause", "5s").want(t, 0, "move")
	t.Logf("moved in %v:\n%s%s", time.Since(start), res.stderr, res.stdout)
	if !strings.Contains(res.stdout, "moved: ") {
		t.Errorf("stdout: %q", res.stdout)
	}
	select {
	case <-switched:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer was never refused by Redis")
	}
	// A few more writes on bloom serve, then stop.
	for deadline := time.Now().Add(10 * time.Second); ; {
		mu.Lock()
		n := onTarget
		mu.Unlock()
		if n >= 100 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d acknowledged writes, %d of them on bloom serve", writes, onTarget)
	lost := 0
	for k, v := range acked {
		got, err := to.Get(ctx, k).Result()
		if v == "" && err == redis.Nil {
			continue
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		if got != v {
			if lost++; lost <= 5 {
				t.Errorf("key %s: bloom serve holds %q, the last acknowledged write %q", k, got, v)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d keys lost an acknowledged write", lost, len(acked))
	}
	if withModule {
		for i := range 20 {
			k := "bf" + strconv.Itoa(i)
			w, _ := rc.Do(ctx, "BF.CARD", k).Int()
			g, err := to.Do(ctx, "BF.CARD", k).Int()
			if err != nil || g != w || w == 0 {
				t.Errorf("BF.CARD %s: Redis %d, bloom serve %d %v", k, w, g, err)
			}
		}
	}
	// bloom serve is a master; Redis refuses writes.
	if role, _ := to.Do(ctx, "ROLE").Slice(); len(role) == 0 || role[0] != "master" {
		t.Errorf("ROLE on bloom serve = %v", role)
	}
	if err := rc.Set(ctx, "late", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("a write to Redis after the move: %v, want READONLY", err)
	}
}

// A move that cannot finish leaves Redis writable and bloom serve
// following it: here bloom serve cannot hold Redis's hash.
func TestMoveRefusedKeepsSourceWritable(t *testing.T) {
	r := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	rc := r.Client(t)
	ctx := context.Background()
	rc.HSet(ctx, "h", "f", "v")
	toAddr, _ := startServe(t)
	res := bloomIn(t, t.TempDir(), "", "move", "--from", r.Addr, "--to", toAddr, "--timeout", "3s")
	if res.code != 2 || !strings.Contains(res.stderr, "hash: 1 key") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Errorf("Redis refuses writes after a failed move: %v", err)
	}
}

func redistestModule() string {
	return strings.TrimSpace(os.Getenv(redistest.ModuleEnv))
}
