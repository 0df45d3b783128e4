package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bloomkit/bloomkit/internal/keyslot"
	"github.com/bloomkit/bloomkit/internal/redistest"
)

// startServe runs `bloom serve` (the test's binary) on a free port with a
// fresh data directory, and returns its address and a client. It is
// stopped when the test ends.
func startServe(t *testing.T) (string, *redis.Client) {
	t.Helper()
	dir := t.TempDir()
	_, c, _ := serveIn(t, dir, "--dir", filepath.Join(dir, "data"))
	return c.Options().Addr, c
}

// fill creates n filters named prefix0.. on c: BF keys with a few items
// each (every 7th grown past its first link), every 10th key a CF key, and
// returns the names.
func fill(t *testing.T, c redis.Cmdable, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var names []string
	for start := 0; start < n; start += 500 {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := start; i < min(start+500, n); i++ {
				k := fmt.Sprintf("%s%d", prefix, i)
				names = append(names, k)
				switch {
				case i%10 == 0:
					p.Do(ctx, "CF.RESERVE", k, 64)
					p.Do(ctx, "CF.ADD", k, "item-"+k)
				case i%7 == 0:
					p.Do(ctx, "BF.RESERVE", k, 0.01, 10)
					for j := range 40 {
						p.Do(ctx, "BF.ADD", k, fmt.Sprintf("item-%d", j))
					}
				default:
					p.Do(ctx, "BF.ADD", k, "item-"+k)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// sameAnswers checks that both servers answer alike for each key: INFO,
// its own item, and absent items.
func sameAnswers(t *testing.T, a, b redis.UniversalClient, names []string) {
	t.Helper()
	ctx := context.Background()
	for _, k := range names {
		prefix := "BF"
		if typ := a.Type(ctx, k).Val(); typ == "MBbloomCF" {
			prefix = "CF"
		}
		args := []any{prefix + ".MEXISTS", k, "item-" + k, "item-3", "absent-1", "absent-2"}
		ia, ib := a.Do(ctx, prefix+".INFO", k).Val(), b.Do(ctx, prefix+".INFO", k).Val()
		qa, qb := a.Do(ctx, args...).Val(), b.Do(ctx, args...).Val()
		if !reflect.DeepEqual(ia, ib) || !reflect.DeepEqual(qa, qb) || qa == nil {
			t.Fatalf("key %s: INFO %v / %v, answers %v / %v", k, ia, ib, qa, qb)
		}
	}
}

// TestPullPush: a BF key of several links and a CF key go to dump files
// and into another server unchanged; info and test read the files; an
// existing key is kept without --replace; damaged files and missing keys
// are errors that change nothing.
func TestPullPush(t *testing.T) {
	srcAddr, src := startServe(t)
	dstAddr, dst := startServe(t)
	ctx := context.Background()
	names := fill(t, src, "k", 30)
	dir := t.TempDir()
	for _, k := range []string{"k7", "k10"} {
		bloomIn(t, dir, "", "pull", "--addr", srcAddr, "--format", "scandump", k, "-o", k+".dump").want(t, 0, "pull "+k)
		r := bloomIn(t, dir, "", "test", k+".dump", "item-"+k, "item-3", "never-added")
		if k == "k7" && r.stdout != "item-k7\tabsent\nitem-3\tpresent\nnever-added\tabsent\n" ||
			k == "k10" && r.stdout != "item-k10\tpresent\nitem-3\tabsent\nnever-added\tabsent\n" {
			t.Errorf("test %s.dump: %q", k, r.stdout)
		}
		bloomIn(t, dir, "", "push", "--addr", dstAddr, k+".dump", k).want(t, 0, "push "+k)
	}
	sameAnswers(t, src, dst, []string{"k7", "k10"})
	if res := infoJSON(t, dir, "k7.dump"); res.K < 2 {
		t.Errorf("k7 should have grown past its first link: %+v", res)
	}
	// The dump as stdout and stdin, gzipped between.
	if out, err := exec.Command("bash", "-c", fmt.Sprintf("%q pull --addr %s k1 -o - | gzip | %q push --addr %s - copy1", bin, srcAddr, bin, dstAddr)).CombinedOutput(); err != nil {
		t.Fatalf("pull | gzip | push: %v %s", err, out)
	}
	if a, b := src.Do(ctx, "BF.INFO", "k1").Val(), dst.Do(ctx, "BF.INFO", "copy1").Val(); !reflect.DeepEqual(a, b) {
		t.Errorf("piped copy: %v vs %v", a, b)
	}
	r := bloomIn(t, dir, "", "push", "--addr", dstAddr, "k7.dump", "k7")
	if r.code != 2 || !strings.Contains(r.stderr, "--replace") {
		t.Errorf("push onto an existing key: exit %d %q", r.code, r.stderr)
	}
	bloomIn(t, dir, "", "push", "--addr", dstAddr, "--replace", "k10.dump", "k7").want(t, 0, "push --replace")
	if typ := dst.Type(ctx, "k7").Val(); typ != "MBbloomCF" {
		t.Errorf("--replace left a %s", typ)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "k7.dump"))
	data[len(data)-10] ^= 0xff
	os.WriteFile(filepath.Join(dir, "bad.dump"), data, 0o644)
	r = bloomIn(t, dir, "", "push", "--addr", dstAddr, "bad.dump", "fresh")
	if r.code != 2 || dst.Exists(ctx, "fresh", "fresh.bloom-load").Val() != 0 {
		t.Errorf("damaged dump: exit %d %q; keys left: %d", r.code, r.stderr, dst.Exists(ctx, "fresh", "fresh.bloom-load").Val())
	}
	if r := bloomIn(t, dir, "", "pull", "--addr", srcAddr, "nosuchkey", "-o", "x.dump"); r.code != 2 {
		t.Errorf("pull of a missing key: exit %d", r.code)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.dump")); err == nil {
		t.Error("pull of a missing key left a file")
	}
	if r := bloomIn(t, dir, "", "pull", "--addr", "127.0.0.1:1", "k1", "-o", "y.dump"); r.code != 2 || r.stderr == "" {
		t.Errorf("pull from nowhere: exit %d %q", r.code, r.stderr)
	}
	_ = names
}

// TestMigrate moves 10,000 keys between two bloom serves with progress
// and a verified report; a second run finds them all unchanged; a key that
// changed on SRC is a conflict until --replace.
func TestMigrate(t *testing.T) {
	if raceEnabled {
		// Three batches of 1,000 names through three race-built
		// processes cost ten seconds of CPU; migrate's workers run under
		// the race detector in TestMigrateNative and TestMigrateSketches.
		t.Skip("3,000 filters: runs without -race (make test reruns it so)")
	}
	srcAddr, src := startServe(t)
	dstAddr, dst := startServe(t)
	ctx := context.Background()
	// 3,000 filters: three of migrate's batches of 1,000 names.
	names := fill(t, src, "m:", 3_000)
	src.Set(ctx, "plain-string", "x", 0) // not a filter: left alone
	src.Do(ctx, "CF.RESERVE", "m:empty-cf", 1000)
	src.Expire(ctx, "m:1", time.Hour)
	names = append(names, "m:empty-cf")
	dir := t.TempDir()
	r := bloomIn(t, dir, "", "migrate", "--progress", "always", "--samples", "32", "--match", "m:*", srcAddr, dstAddr).want(t, 0, "migrate")
	for _, want := range []string{"matched:   3,001 (2,700 BF, 301 CF)", "left out:  0 (neither filters nor sketches)", "copied:    3,001", "verified:  3,001 of 3,001", "failed:    0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "keys/s") {
		t.Errorf("no progress on stderr: %q", r.stderr)
	}
	sameAnswers(t, src, dst, names[:200])
	sameAnswers(t, src, dst, names[len(names)-200:])
	if n := dst.DBSize(ctx).Val(); n != 3_001 {
		t.Errorf("DST holds %d keys, want 3,001", n)
	}
	if ttl := dst.TTL(ctx, "m:1").Val(); ttl < 50*time.Minute {
		t.Errorf("TTL not carried: %v", ttl)
	}
	r = bloomIn(t, dir, "", "migrate", "--json", "--samples", "8", srcAddr, dstAddr).want(t, 0, "migrate again")
	// The string key matches "*" and is counted as left out.
	if !strings.Contains(r.stdout, `"unchanged": 3001`) || !strings.Contains(r.stdout, `"copied": 0`) ||
		!strings.Contains(r.stdout, `"other_keys": 1`) || !strings.Contains(r.stdout, `"string": 1`) {
		t.Errorf("second run:\n%s", r.stdout)
	}
	src.Do(ctx, "BF.ADD", "m:1", "changed")
	r = bloomIn(t, dir, "", "migrate", "--match", "m:1", srcAddr, dstAddr)
	if r.code != 2 || !strings.Contains(r.stdout, "conflicts: 1") {
		t.Errorf("changed key: exit %d\n%s", r.code, r.stdout)
	}
	bloomIn(t, dir, "", "migrate", "--replace", "--match", "m:1", srcAddr, dstAddr).want(t, 0, "migrate --replace")
	sameAnswers(t, src, dst, []string{"m:1"})
}

// TestMigrateCluster moves keys from bloom serve to a three-master Redis
// Cluster with the RedisBloom module (routed by hash slot), and back to a
// fresh bloom serve: every key answers alike on all three.
func TestMigrateCluster(t *testing.T) {
	module := redistest.RedisBloomModule(t)
	cl := redistest.StartClusterWith(t, "--loadmodule", module)
	srcAddr, src := startServe(t)
	backAddr, back := startServe(t)
	names := fill(t, src, "c:", 2000)
	opt := cl.Options()
	opt.Protocol = 2 // replies as flat lists, as bloom serve's client gives them
	cc := redis.NewClusterClient(opt)
	t.Cleanup(func() { cc.Close() })
	dir := t.TempDir()
	r := bloomIn(t, dir, "", "migrate", "--samples", "16", srcAddr, cl.Addrs[1]).want(t, 0, "migrate to the cluster")
	if !strings.Contains(r.stdout, "verified:  2,000 of 2,000") {
		t.Errorf("report:\n%s", r.stdout)
	}
	sameAnswers(t, src, cc, names)
	bloomIn(t, dir, "", "migrate", "--samples", "16", cl.Addrs[0], backAddr).want(t, 0, "migrate back")
	sameAnswers(t, src, back, names)
	r = bloomIn(t, dir, "", "migrate", "--json", srcAddr, cl.Addrs[2]).want(t, 0, "again")
	if !strings.Contains(r.stdout, `"unchanged": 2000`) {
		t.Errorf("second run to the cluster:\n%s", r.stdout)
	}
}

// TestTempKey: the scratch key is in the key's cluster hash slot (RENAME
// needs that), for keys with and without a hash tag.
func TestTempKey(t *testing.T) {
	for _, k := range []string{"a", "urls", "seen:{user7}:day", "{}x", "k:" + strings.Repeat("z", 300)} {
		tmp := tempKey(k)
		if tmp == k || keyslot.Of(tmp) != keyslot.Of(k) {
			t.Errorf("%q → %q: slots %d and %d", k, tmp, keyslot.Of(k), keyslot.Of(tmp))
		}
	}
}
