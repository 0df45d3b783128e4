package redisfilter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/keyslot"
	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/bloomkit/bloomkit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// backend is a Redis to run the tests against: a single server or a
// cluster. newClient returns a fresh client (a separate connection pool,
// as another process would have).
type backend struct {
	name      string
	newClient func(t *testing.T) redis.UniversalClient
	cluster   *redistest.Cluster
}

// Each backend runs every test as a subtest, so one server (or cluster)
// serves them all; filters have distinct names.
//
// The race detector watches TestCluster, which runs the same tests, the
// concurrent ones included, through the same code (the package tells a
// cluster from a single server only to find the node whose TIME a Window
// keeps); TestSingle runs without it, in a fifth of the time.
func TestSingle(t *testing.T) {
	if raceEnabled {
		t.Skip("TestCluster runs the same tests under the race detector; this one runs without -race")
	}
	s := redistest.Start(t)
	runAll(t, backend{name: "single", newClient: func(t *testing.T) redis.UniversalClient { return s.Client(t) }})
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node Redis Cluster: make test runs it, make test-short does not")
	}
	c := redistest.StartCluster(t)
	runAll(t, backend{name: "cluster", newClient: func(t *testing.T) redis.UniversalClient { return c.Client(t) }, cluster: c})
}

func runAll(t *testing.T, b backend) {
	tests := []struct {
		name string
		fn   func(*testing.T, backend)
	}{
		{"ManyKeys", testManyKeys},
		{"LayoutMatchesBlocked", testLayoutMatchesBlocked},
		{"OneRoundTripPerBatch", testRoundTrips},
		{"CreateRace", testCreateRace},
		{"ReopenMismatch", testReopenMismatch},
		{"ConcurrentTestAndAdd", testConcurrentTestAndAdd},
		{"Export", testExport},
		{"Import", testImport},
		{"ImportDamaged", testImportDamaged},
		{"RebuildWhileRunning", testRebuildWhileRunning},
		{"ResetAndDelete", testResetAndDelete},
		{"RebuildFailures", testRebuildFailures},
		{"Reshard", testReshard},
		{"Window", testWindow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
	}
}

// long reports whether the long forms of the tests run (BLOOMKIT_LONG=1,
// make test-long).
func long() bool { return os.Getenv("BLOOMKIT_LONG") == "1" }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// marshal returns f in the bloomkit file format.
func marshal(f io.WriterTo) ([]byte, error) {
	var b bytes.Buffer
	_, err := f.WriteTo(&b)
	return b.Bytes(), err
}

func keys(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = fmt.Appendf(nil, "%s-%d", prefix, i)
	}
	return out
}

func mustOpen(t *testing.T, ctx context.Context, c redis.UniversalClient, name string, o Options) *Filter {
	t.Helper()
	f, err := Open(ctx, c, name, o)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	return f
}

// testManyKeys adds 200,000 keys (a million in the long form) and checks:
// no false negatives, the false-positive rate within 5σ of the planned
// rate over 100,000 absent keys (σ is 3% of the rate there: a rate off by
// a fifth fails), answers identical to a bloom.Blocked with the same keys,
// and the statistics.
func testManyKeys(t *testing.T, b backend) {
	ctx := ctxT(t)
	const p = 0.01
	n, trials, shardBytes := 200_000, 100_000, uint64(16<<10)
	if long() {
		n, trials, shardBytes = 1_000_000, 200_000, 64<<10
	}
	f := mustOpen(t, ctx, b.newClient(t), "many", Options{Capacity: uint64(n), ErrorRate: p, ShardBytes: shardBytes})
	if s := f.st.Load().live.shards(); s < 10 {
		t.Fatalf("%d shards, want at least 10 to exercise sharding", s)
	}
	in := keys("in", n)
	start := time.Now()
	if err := f.AddMany(ctx, in); err != nil {
		t.Fatal(err)
	}
	addTime := time.Since(start)
	start = time.Now()
	got, err := f.TestMany(ctx, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: AddMany %v, TestMany %v for %d keys (%.0f and %.0f keys/s)", b.name, addTime, time.Since(start), n,
		float64(n)/addTime.Seconds(), float64(n)/time.Since(start).Seconds())
	if len(got) != n {
		t.Fatalf("TestMany returned %d answers for %d keys", len(got), n)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("false negative: key %q", in[i])
		}
	}

	// False positives: absent keys, against the planned rate and against
	// a local filter holding the same keys (which must answer the same).
	local, err := bloom.NewBlockedFromParams(f.Params())
	if err != nil {
		t.Fatal(err)
	}
	bloom.AddMany(local, in)
	out := keys("out", trials)
	got, err = f.TestMany(ctx, out, got[:0])
	if err != nil {
		t.Fatal(err)
	}
	want := bloom.TestMany(local, out, nil)
	fp := 0
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("key %q: shared filter says %v, bloom.Blocked %v", out[i], got[i], want[i])
		}
		if got[i] {
			fp++
		}
	}
	rate := float64(fp) / float64(trials)
	expect := bloom.BlockedFalsePositiveRate(f.Params().M, uint64(n), f.Params().K)
	sigma := math.Sqrt(expect * (1 - expect) / float64(trials))
	t.Logf("false-positive rate %.5f, expected %.5f ± %.5f", rate, expect, sigma)
	if math.Abs(rate-expect) > 5*sigma {
		t.Errorf("false-positive rate %.5f is more than 5σ from the expected %.5f", rate, expect)
	}

	info, err := f.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.BitsSet != local.Stats().BitsSet {
		t.Errorf("BITCOUNT says %d bits set, bloom.Blocked %d", info.BitsSet, local.Stats().BitsSet)
	}
	if c := info.ApproxCount(); math.Abs(float64(c)-float64(n))/float64(n) > 0.02 {
		t.Errorf("ApproxCount = %d, want within 2%% of %d", c, n)
	}
	if r := info.EstimatedFPR(); math.Abs(r-p)/p > 0.1 {
		t.Errorf("EstimatedFPR = %v, want within 10%% of %v", r, p)
	}
	if err := f.Delete(ctx); err != nil {
		t.Fatal(err)
	}
}

// testLayoutMatchesBlocked checks the bit layout itself: after adding keys
// by every path (single keys, sparse batches of BITFIELDs, dense batches of
// images), each shard's bytes are the bloom file payload's bytes of its
// blocks, and every answer is bloom.Blocked's.
func testLayoutMatchesBlocked(t *testing.T, b backend) {
	ctx := ctxT(t)
	c := b.newClient(t)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		// 36 shards of 1 KiB: batches are dense (image commands).
		{"small-shards", Options{Capacity: 20_000, ErrorRate: 0.001, Seed: 42, ShardBytes: 1024}},
		// One 64 KiB shard, batches of 16 keys: sparse (BITFIELDs).
		{"big-shard", Options{Capacity: 20_000, ErrorRate: 0.001, Seed: 42, ShardBytes: 64 << 10, BatchSize: 16}},
	} {
		f := mustOpen(t, ctx, c, "layout-"+tc.name, tc.o)
		local, err := bloom.NewBlockedFromParams(f.Params())
		if err != nil {
			t.Fatal(err)
		}
		ks := keys("layout", 6000)
		for i, k := range ks[:1500] {
			var err error
			switch i % 3 {
			case 0:
				err = f.Add(ctx, k)
			case 1:
				err = f.AddString(ctx, string(k))
			default:
				var present bool
				present, err = f.TestAndAdd(ctx, k)
				if present != local.Test(k) {
					t.Fatalf("%s: TestAndAdd(%q) = %v, bloom.Blocked says %v", tc.name, k, present, local.Test(k))
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			local.Add(k)
		}
		if err := f.AddMany(ctx, ks[1500:4000]); err != nil {
			t.Fatal(err)
		}
		bloom.AddMany(local, ks[1500:4000])
		got, err := f.TestAndAddMany(ctx, ks[3500:6000], nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range ks[3500:6000] {
			if got[i] != local.TestAndAdd(k) {
				t.Fatalf("%s: TestAndAddMany: key %q says %v, bloom.Blocked %v", tc.name, k, got[i], !got[i])
			}
		}
		data, err := marshal(local)
		if err != nil {
			t.Fatal(err)
		}
		payload := data[80 : len(data)-4]
		st := f.st.Load()
		g := &st.live
		for s := range g.shards() {
			got, err := c.Get(ctx, f.shardKey(g, s, st.epoch)).Bytes()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
			start := s * g.shardBytes
			want := payload[start : start+g.shardLen(s)]
			got = append(got, make([]byte, len(want)-len(got))...)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: shard %d differs from the bloom payload bytes %d..%d", tc.name, s, start, start+g.shardLen(s))
			}
		}
		probe := append(keys("absent", 3000), ks...)
		many, err := f.TestMany(ctx, probe, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range probe {
			one, err := f.TestString(ctx, string(k))
			if err != nil {
				t.Fatal(err)
			}
			if one != local.Test(k) || many[i] != one {
				t.Fatalf("%s: key %q: Test %v, TestMany %v, bloom.Blocked %v", tc.name, k, one, many[i], local.Test(k))
			}
		}
		t.Logf("%s: %d shards, stats %+v", tc.name, g.shards(), f.Stats())
	}
}

// pipeCounter counts pipelines and the commands in them.
type pipeCounter struct {
	pipelines, cmds atomic.Int64
	maxCmds         atomic.Int64
}

func (h *pipeCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || !slices.Contains([]string{"bitfield", "bitfield_ro", "eval", "getrange"}, cmds[0].Name()) {
			return next(ctx, cmds) // connection set-up, not ours
		}
		h.pipelines.Add(1)
		h.cmds.Add(int64(len(cmds)))
		for {
			m := h.maxCmds.Load()
			if int64(len(cmds)) <= m || h.maxCmds.CompareAndSwap(m, int64(len(cmds))) {
				break
			}
		}
		return next(ctx, cmds)
	}
}

// testRoundTrips checks that a batch is one pipeline (one round trip on a
// single server) holding, per shard touched, one BITFIELD per
// keysPerCommand keys, or one image command when the keys are dense.
func testRoundTrips(t *testing.T, b backend) {
	for _, tc := range []struct {
		name     string
		capacity uint64
		shard    uint64
		dense    bool
	}{
		{"sparse", 10_000_000, 4 << 20, false}, // 3 shards, 1,667 keys each a batch
		{"dense", 100_000, 16 << 10, true},     // 8 shards, 625 keys each a batch
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			c := b.newClient(t)
			f := mustOpen(t, ctx, c, "roundtrips-"+tc.name, Options{Capacity: tc.capacity, ErrorRate: 0.01, ShardBytes: tc.shard, BatchSize: 5000})
			g := f.st.Load().live
			var h pipeCounter
			c.AddHook(&h)
			ks := keys("rt", 20_000)
			if err := f.AddMany(ctx, ks); err != nil {
				t.Fatal(err)
			}
			got, err := f.TestMany(ctx, ks, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := allTrue(got, ks); err != nil {
				t.Fatal(err)
			}
			// Count the commands each batch should have.
			want := uint64(0)
			for b := 0; b < len(ks); b += 5000 {
				perShard := map[uint64]uint64{}
				for _, k := range ks[b : b+5000] {
					block, _ := bloom.LocateBlock(f.Params(), f.Params().HashKey(k), nil)
					perShard[block/g.blocksPerShard()]++
				}
				for _, n := range perShard {
					if tc.dense {
						want += 2 // AddMany and TestMany
					} else {
						want += 2 * ((n + keysPerCommand - 1) / keysPerCommand)
					}
				}
			}
			st := f.Stats()
			t.Logf("%d shards; stats %+v; hook saw %d pipelines, %d commands", g.shards(), st, h.pipelines.Load(), h.cmds.Load())
			if tc.dense && st.Images != st.Commands || !tc.dense && st.Images != 0 {
				t.Errorf("%d of %d commands were images, want all when dense, none when sparse", st.Images, st.Commands)
			}
			if st.Batches != 8 || st.Commands != want {
				t.Errorf("40,000 keys in batches of 5,000 over %d shards: %d batches, %d commands; want 8 and %d", g.shards(), st.Batches, st.Commands, want)
			}
			if b.cluster == nil && (h.pipelines.Load() != 8 || h.cmds.Load() != int64(want)) {
				// On one server a pipeline is one round trip.
				t.Errorf("hook saw %d pipelines with %d commands, want 8 with %d", h.pipelines.Load(), h.cmds.Load(), want)
			}
			if b.cluster != nil && (h.pipelines.Load() < 8 || h.pipelines.Load() > 8*3) {
				// In a cluster, one round trip to each node a batch touches.
				t.Errorf("hook saw %d pipelines, want 8 to 24 (8 batches, 3 nodes)", h.pipelines.Load())
			}
		})
	}
}

func allTrue(got []bool, ks [][]byte) error {
	for i, ok := range got {
		if !ok {
			return fmt.Errorf("false negative: key %q", ks[i])
		}
	}
	return nil
}

// testCreateRace: many clients race to create one filter; they all end
// with one configuration.
func testCreateRace(t *testing.T, b backend) {
	ctx := ctxT(t)
	for round := range 2 {
		name := fmt.Sprintf("race-%d", round)
		const racers = 12
		var wg sync.WaitGroup
		fs := make([]*Filter, racers)
		errs := make([]error, racers)
		clients := []redis.UniversalClient{b.newClient(t), b.newClient(t)}
		for i := range racers {
			wg.Go(func() {
				// A random seed each: only the winner's may survive.
				fs[i], errs[i] = Open(ctx, clients[i%2], name, Options{Capacity: 10_000, ErrorRate: 0.01, RandomSeed: true})
			})
		}
		wg.Wait()
		for i := range racers {
			if errs[i] != nil {
				t.Fatalf("racer %d: %v", i, errs[i])
			}
			if fs[i].Params() != fs[0].Params() || fs[i].st.Load().live.id != fs[0].st.Load().live.id {
				t.Fatalf("racer %d has %+v gen %s, racer 0 %+v gen %s", i, fs[i].Params(), fs[i].st.Load().live.id, fs[0].Params(), fs[0].st.Load().live.id)
			}
		}
		// With explicit, different seeds exactly one racer wins.
		name += "-seeds"
		var ok, mismatch atomic.Int32
		for i := range racers {
			wg.Go(func() {
				_, err := Open(ctx, clients[i%2], name, Options{Capacity: 10_000, ErrorRate: 0.01, Seed: uint64(i)})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, ErrParamsMismatch):
					mismatch.Add(1)
				default:
					t.Errorf("racer %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if ok.Load() != 1 || mismatch.Load() != racers-1 {
			t.Fatalf("%d racers opened, %d got ErrParamsMismatch; want 1 and %d", ok.Load(), mismatch.Load(), racers-1)
		}
	}
}

func testReopenMismatch(t *testing.T, b backend) {
	ctx := ctxT(t)
	c := b.newClient(t)
	o := Options{Capacity: 50_000, ErrorRate: 0.01, Seed: 7, ShardBytes: 4096}
	f := mustOpen(t, ctx, c, "reopen", o)
	if err := f.AddString(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Options{
		{Capacity: 60_000, ErrorRate: 0.01, Seed: 7},
		{Capacity: 50_000, ErrorRate: 0.001, Seed: 7},
		{Capacity: 50_000, ErrorRate: 0.01, Seed: 8},
		{Capacity: 50_000, ErrorRate: 0.01, Seed: 7, ShardBytes: 8192},
	} {
		if _, err := Open(ctx, c, "reopen", bad); !errors.Is(err, ErrParamsMismatch) {
			t.Errorf("Open with %+v: %v, want ErrParamsMismatch", bad, err)
		}
	}
	// Same parameters, or none, attach to the same bits.
	for _, good := range []Options{o, {Capacity: 50_000, ErrorRate: 0.01, Seed: 7}, {}, {Capacity: 50_000, ErrorRate: 0.01, RandomSeed: true}} {
		g, err := Open(ctx, b.newClient(t), "reopen", good)
		if err != nil {
			t.Fatalf("Open with %+v: %v", good, err)
		}
		if ok, err := g.TestString(ctx, "x"); err != nil || !ok {
			t.Fatalf("reopened filter: Test(x) = %v, %v", ok, err)
		}
	}
	if _, err := Open(ctx, c, "no-such-filter", Options{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open of a missing filter without Capacity: %v, want ErrNotFound", err)
	}
	for _, bad := range []struct {
		name string
		o    Options
	}{
		{"a{b}", Options{Capacity: 1, ErrorRate: 0.1}},
		{"", Options{Capacity: 1, ErrorRate: 0.1}},
		{"ok", Options{Capacity: 1, ErrorRate: 1.5}},
		{"ok", Options{Capacity: 1, ErrorRate: 0.1, ShardBytes: 100}},
		{"ok", Options{Capacity: 1, ErrorRate: 0.1, Prefix: "x}"}},
	} {
		if _, err := Open(ctx, c, bad.name, bad.o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open(%q, %+v): %v, want ErrInvalidOptions", bad.name, bad.o, err)
		}
	}
}

// testConcurrentTestAndAdd: two clients with 8 goroutines each
// TestAndAdd the same 100,000 keys; each key must be reported new exactly
// once, except keys that were false positives when first added. The keys
// are cut into 4 groups; each group is walked by 4 goroutines, 2 on each
// client, in the same order at the same time (in batches of different
// sizes, and every 50th key alone), so every key is contended.
func testConcurrentTestAndAdd(t *testing.T, b backend) {
	ctx := ctxT(t)
	// 30,000 keys in 9 shards: each shard sees thousands of concurrent
	// batches; the long form, 100,000.
	const p = 0.01
	n := 30_000
	if long() {
		n = 100_000
	}
	o := Options{Capacity: uint64(n), ErrorRate: p, ShardBytes: 4096}
	f1 := mustOpen(t, ctx, b.newClient(t), "tanda", o)
	f2 := mustOpen(t, ctx, b.newClient(t), "tanda", o)
	ks := keys("tanda", n)
	newCount := make([]atomic.Int32, n)
	var wg sync.WaitGroup
	for gr := range 16 {
		f := f1
		if gr%2 == 1 {
			f = f2
		}
		group, batchSize := gr/4, []int{100, 300, 700, 1000}[gr%4]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(group), 1)) // the group's order
			var order []int
			for _, i := range rng.Perm(n) {
				if i%4 == group {
					order = append(order, i)
				}
			}
			batch := make([][]byte, 0, batchSize)
			idx := make([]int, 0, batchSize)
			flush := func() bool {
				got, err := f.TestAndAddMany(ctx, batch, nil)
				if err != nil {
					t.Error(err)
					return false
				}
				for j, present := range got {
					if !present {
						newCount[idx[j]].Add(1)
					}
				}
				batch, idx = batch[:0], idx[:0]
				return true
			}
			for _, i := range order {
				if i%50 == 0 {
					present, err := f.TestAndAdd(ctx, ks[i])
					if err != nil {
						t.Error(err)
						return
					}
					if !present {
						newCount[i].Add(1)
					}
					continue
				}
				batch, idx = append(batch, ks[i]), append(idx, i)
				if len(batch) == cap(batch) && !flush() {
					return
				}
			}
			if len(batch) > 0 {
				flush()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	never := 0
	for i := range newCount {
		switch c := newCount[i].Load(); {
		case c > 1:
			t.Fatalf("key %q was reported new %d times", ks[i], c)
		case c == 0:
			never++
		}
	}
	// A key is never new when it was a false positive at its first add:
	// about sum over i of FPR(i keys added), which a local filter measures.
	local, _ := bloom.NewBlockedFromParams(f1.Params())
	expect := 0
	for _, k := range ks {
		if local.TestAndAdd(k) {
			expect++
		}
	}
	t.Logf("%d of %d keys were never reported new (false positives at first add); a sequential run gives %d", never, n, expect)
	if float64(never) > 1.5*float64(expect)+30 {
		t.Errorf("%d keys never reported new, want about %d", never, expect)
	}
}

// testExport: a shared filter exported to a file loads with bloom.Read
// and answers identically.
func testExport(t *testing.T, b backend) {
	ctx := ctxT(t)
	f := mustOpen(t, ctx, b.newClient(t), "export", Options{Capacity: 20_000, ErrorRate: 0.001, Seed: 99, ShardBytes: 4096})
	in := keys("exp", 20_000)
	if err := f.AddMany(ctx, in); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "shared.bloom")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.Export(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	if want := int64(80 + f.Params().M/8 + 4); n != want {
		t.Errorf("Export wrote %d bytes, want %d", n, want)
	}
	file, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	loaded, err := bloom.Read(file)
	if err != nil {
		t.Fatalf("bloom.Read of the export: %v", err)
	}
	blk, ok := loaded.(*bloom.Blocked)
	if !ok {
		t.Fatalf("export loaded as %T, want *bloom.Blocked", loaded)
	}
	if blk.Params() != f.Params() {
		t.Fatalf("exported params %+v, shared %+v", blk.Params(), f.Params())
	}
	all := append(in, keys("notin", 20_000)...)
	shared, err := f.TestMany(ctx, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range all {
		if blk.Test(k) != shared[i] {
			t.Fatalf("key %q: exported filter says %v, shared %v", k, blk.Test(k), shared[i])
		}
		if i < len(in) && !shared[i] {
			t.Fatalf("false negative %q", k)
		}
	}
	// And the same bits as a filter built locally from the same keys.
	local, _ := bloom.NewBlockedFromParams(f.Params())
	bloom.AddMany(local, in)
	if !local.Equal(blk) {
		t.Error("exported filter differs from a bloom.Blocked holding the same keys")
	}
}

// testImport: a filter built offline, imported, answers identically, and
// exports back to the same bytes.
func testImport(t *testing.T, b backend) {
	ctx := ctxT(t)
	f := mustOpen(t, ctx, b.newClient(t), "import", Options{Capacity: 1000, ErrorRate: 0.01, ShardBytes: 4096})
	if err := f.AddString(ctx, "before-import"); err != nil {
		t.Fatal(err)
	}
	other := mustOpen(t, ctx, b.newClient(t), "import", Options{})

	p := bloom.EstimateBlocked(30_000, 0.005)
	p.Seed, p.Hash = 12345, bloom.HashXXH3 // the id of a filter kept in Redis
	offline, err := bloom.NewBlockedFromParams(p)
	if err != nil {
		t.Fatal(err)
	}
	in := keys("offline", 30_000)
	bloom.AddMany(offline, in)
	data, err := marshal(offline)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Import(ctx, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if f.Params() != p {
		t.Fatalf("after import params %+v, want %+v", f.Params(), p)
	}
	all := append(in, keys("absent", 20_000)...)
	for _, g := range []*Filter{f, other} { // the other client follows
		got, err := g.TestMany(ctx, all, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range all {
			if got[i] != offline.Test(k) {
				t.Fatalf("key %q: imported filter says %v, offline %v", k, got[i], !got[i])
			}
		}
	}
	if other.Params() != p {
		t.Errorf("other client did not follow the import: %+v", other.Params())
	}
	var buf bytes.Buffer
	if _, err := other.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), data) {
		t.Error("export after import differs from the imported file")
	}
	assertNoStrays(t, ctx, b, f)
}

// assertNoStrays checks that the only string keys of filter f are the
// live generation's shards (no staging keys or old generations left).
func assertNoStrays(t *testing.T, ctx context.Context, b backend, f *Filter) {
	t.Helper()
	st, err := f.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for s := range st.live.shards() {
		live[f.shardKey(&st.live, s, st.epoch)] = true
	}
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, f.opts.Prefix+":{"+f.name+":*", 100).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			typ, err := c.Type(ctx, k).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			if typ != "hash" && !live[k] {
				t.Errorf("stray key %s (%s)", k, typ)
			}
			if typ == "hash" {
				if ttl := c.TTL(ctx, k).Val(); ttl <= 0 {
					t.Errorf("tombstone %s has no TTL (%v)", k, ttl)
				}
			}
			mu.Unlock()
		}
		return iter.Err()
	}
	switch c := f.c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// testImportDamaged: damaged and truncated files are refused and change
// nothing.
func testImportDamaged(t *testing.T, b backend) {
	ctx := ctxT(t)
	f := mustOpen(t, ctx, b.newClient(t), "damaged", Options{Capacity: 1000, ErrorRate: 0.01, ShardBytes: 4096})
	if err := f.AddString(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
	before := f.Params()
	pv1 := bloom.EstimateBlocked(20_000, 0.01)
	pv1.Hash = bloom.HashXXH3
	offline, _ := bloom.NewBlockedFromParams(pv1)
	bloom.AddMany(offline, keys("x", 20_000))
	data, _ := marshal(offline)
	// NewBlocked's filter has hash id 4, whose bits are not where a
	// filter kept in Redis (id 1) looks: refused, not imported.
	newID, _ := bloom.NewBlocked(20_000, 0.01)
	bloom.AddMany(newID, keys("x", 20_000))
	newIDData, _ := marshal(newID)
	flipped := bytes.Clone(data)
	flipped[80+len(flipped)/2] ^= 0x10
	classic, _ := bloom.New(100, 0.01)
	classicData, _ := marshal(classic)
	// A blocked filter counts no keys: a header with a count is refused,
	// as bloom.Read refuses it (Export would write the count back as 0).
	counted := bytes.Clone(data)
	binary.LittleEndian.PutUint64(counted[56:], 20_000)
	binary.LittleEndian.PutUint32(counted[72:], crc32.Checksum(counted[:72], format.Castagnoli))
	binary.LittleEndian.PutUint32(counted[len(counted)-4:], crc32.Checksum(counted[:len(counted)-4], format.Castagnoli))
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"flipped bit", flipped, bloom.ErrChecksum},
		{"truncated", data[:len(data)-100], bloom.ErrTruncated},
		{"no trailer", data[:len(data)-4], bloom.ErrTruncated},
		{"classic filter", classicData, bloom.ErrType},
		{"blocked filter of hash id 4", newIDData, bloom.ErrHash},
		{"header with a count", counted, bloom.ErrCorrupt},
		{"not a filter", bytes.Repeat([]byte("not a filter "), 20), bloom.ErrBadMagic},
	} {
		if err := f.Import(ctx, bytes.NewReader(tc.data)); !errors.Is(err, tc.want) {
			t.Errorf("%s: Import: %v, want %v", tc.name, err, tc.want)
		}
	}
	if f.Params() != before {
		t.Errorf("params changed by failed imports: %+v", f.Params())
	}
	if ok, err := f.TestString(ctx, "kept"); err != nil || !ok {
		t.Errorf("after failed imports Test(kept) = %v, %v", ok, err)
	}
	info, err := f.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.BitsSet != uint64(countBits(f.Params(), "kept")) {
		t.Errorf("%d bits set after failed imports, want only those of one key", info.BitsSet)
	}
	assertNoStrays(t, ctx, b, f)
}

func countBits(p bloom.Params, key string) int {
	_, offs := bloom.LocateBlock(p, p.HashKeyString(key), nil)
	seen := map[uint16]bool{}
	for _, o := range offs {
		seen[o] = true
	}
	return len(seen)
}

// testRebuildWhileRunning resizes the filter with Rebuild while writers
// add keys and readers test keys already added: no reader may ever see a
// false negative, and afterwards every key is present at the new size.
func testRebuildWhileRunning(t *testing.T, b backend) {
	ctx := ctxT(t)
	o := Options{Capacity: 20_000, ErrorRate: 0.01, ShardBytes: 2048, BatchSize: 200}
	admin := mustOpen(t, ctx, b.newClient(t), "rebuild", o)
	var (
		mu        sync.Mutex
		started   [][]byte // keys whose add has begun
		completed [][]byte // keys whose add has returned
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for w := range 2 {
		f := mustOpen(t, ctx, b.newClient(t), "rebuild", Options{})
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				batch := keys(fmt.Sprintf("w%d-%d", w, i), 50)
				mu.Lock()
				started = append(started, batch...)
				mu.Unlock()
				var err error
				if i%2 == 0 {
					err = f.AddMany(ctx, batch)
				} else {
					_, err = f.TestAndAddMany(ctx, batch, nil)
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				completed = append(completed, batch...)
				mu.Unlock()
			}
		})
	}
	var checks atomic.Int64
	for range 2 {
		f := mustOpen(t, ctx, b.newClient(t), "rebuild", Options{})
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(1, 2))
			for !stop.Load() {
				mu.Lock()
				var sample [][]byte
				for range min(len(completed), 300) {
					sample = append(sample, completed[rng.IntN(len(completed))])
				}
				mu.Unlock()
				got, err := f.TestMany(ctx, sample, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for i, ok := range got {
					if !ok {
						t.Errorf("false negative during the rebuild: %q", sample[i])
						stop.Store(true)
						return
					}
				}
				checks.Add(int64(len(sample)))
			}
		})
	}
	// progress waits until the writers have completed more than 200 keys
	// (4 batches) and the readers made 10 more checks than when it was
	// called: clients ran in the phase that precedes it.
	progress := func(what string) error {
		mu.Lock()
		keys0 := len(completed)
		mu.Unlock()
		checks0 := checks.Load()
		return poll.Wait(time.Minute, func() error {
			mu.Lock()
			added := len(completed) - keys0
			mu.Unlock()
			if t.Failed() { // a client failed: stop waiting
				return nil
			}
			if c := checks.Load() - checks0; added <= 200 || c < 10 {
				return fmt.Errorf("%s: %d keys added, %d checks", what, added, c)
			}
			return nil
		})
	}
	if err := progress("before the rebuild"); err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatal(err)
	}
	// Resize to 4x, re-adding (as from a source of truth) every key whose
	// add has begun; adds from now on go to both generations.
	err := admin.Rebuild(ctx, Options{Capacity: 80_000, ErrorRate: 0.01}, func(ctx context.Context, b *Builder) error {
		mu.Lock()
		snap := append([][]byte(nil), started...)
		mu.Unlock()
		// Clients add and check during the build.
		if err := progress("during the build"); err != nil {
			return err
		}
		return b.AddMany(ctx, snap)
	})
	if err == nil {
		err = progress("after the rebuild")
	}
	if err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}
	check := mustOpen(t, ctx, b.newClient(t), "rebuild", Options{Capacity: 80_000, ErrorRate: 0.01})
	want := bloom.EstimateBlocked(80_000, 0.01)
	if p := check.Params(); p.M != want.M || p.K != want.K {
		t.Fatalf("after the rebuild m = %d, k = %d; want %d, %d", p.M, p.K, want.M, want.K)
	}
	got, err := check.TestMany(ctx, completed, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("key %q lost by the rebuild", completed[i])
		}
	}
	var retries uint64
	t.Logf("%d keys added, %d reader checks, admin stats %+v", len(completed), checks.Load(), admin.Stats())
	_ = retries
	if _, err := Open(ctx, b.newClient(t), "rebuild", o); !errors.Is(err, ErrParamsMismatch) {
		t.Errorf("Open with the pre-rebuild size: %v, want ErrParamsMismatch", err)
	}
	assertNoStrays(t, ctx, b, check)
}

func testResetAndDelete(t *testing.T, b backend) {
	ctx := ctxT(t)
	o := Options{Capacity: 10_000, ErrorRate: 0.01, ShardBytes: 1024}
	f := mustOpen(t, ctx, b.newClient(t), "reset", o)
	g := mustOpen(t, ctx, b.newClient(t), "reset", o)
	ks := keys("r", 5000)
	if err := f.AddMany(ctx, ks); err != nil {
		t.Fatal(err)
	}
	if err := f.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	// g still holds the old epoch: it must follow, not read old bits.
	got, err := g.TestMany(ctx, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if ok {
			t.Fatalf("after Reset key %q still present", ks[i])
		}
	}
	if g.Stats().Retries == 0 {
		t.Error("the second client did not notice the reset (no retry)")
	}
	if err := g.AddMany(ctx, ks[:10]); err != nil {
		t.Fatal(err)
	}
	info, err := f.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.BitsSet == 0 || info.ApproxCount() < 8 || info.ApproxCount() > 12 {
		t.Errorf("after adding 10 keys: %d bits, ApproxCount %d", info.BitsSet, info.ApproxCount())
	}
	if err := f.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := g.Info(ctx); err != nil || info.BitsSet != 0 {
		t.Errorf("Info after Reset: %d bits, %v", info.BitsSet, err)
	}
	assertNoStrays(t, ctx, b, f)

	if err := f.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := g.TestString(ctx, "r-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Test on a deleted filter: %v, want ErrNotFound", err)
	}
	if err := g.AddString(ctx, "r-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Add on a deleted filter: %v, want ErrNotFound", err)
	}
	if err := f.Delete(ctx); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	assertOnlyTombstones(t, ctx, f)
	// Re-created under the same name, it starts empty, and old handles
	// follow it.
	h := mustOpen(t, ctx, b.newClient(t), "reset", Options{Capacity: 2000, ErrorRate: 0.01})
	if err := h.AddString(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if ok, err := g.TestString(ctx, "new"); err != nil || !ok {
		t.Errorf("old handle on the re-created filter: Test(new) = %v, %v", ok, err)
	}
	if ok, err := g.TestString(ctx, "r-1"); err != nil || ok {
		t.Errorf("old handle on the re-created filter: Test(r-1) = %v, %v", ok, err)
	}
}

// testRebuildFailures: a second rebuild while one runs gets ErrBusy; a
// failing fill keeps the old generation; a rebuilder that dies between
// retiring shards and switching the meta hash makes clients fail with
// ErrStale after StallTimeout instead of answering wrongly.
func testRebuildFailures(t *testing.T, b backend) {
	ctx := ctxT(t)
	o := Options{Capacity: 10_000, ErrorRate: 0.01, ShardBytes: 1024, StallTimeout: 300 * time.Millisecond}
	f := mustOpen(t, ctx, b.newClient(t), "failures", o)
	g := mustOpen(t, ctx, b.newClient(t), "failures", o)
	ks := keys("old", 2000)
	if err := f.AddMany(ctx, ks); err != nil {
		t.Fatal(err)
	}

	inFill, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- f.Rebuild(ctx, Options{}, func(ctx context.Context, b *Builder) error {
			close(inFill)
			<-release
			return errors.New("source of truth unavailable")
		})
	}()
	<-inFill
	if err := g.Reset(ctx); !errors.Is(err, ErrBusy) {
		t.Errorf("Reset during a rebuild: %v, want ErrBusy", err)
	}
	// Clients keep working during the rebuild: tests see the old keys,
	// adds go to both generations.
	got, err := g.TestMany(ctx, ks, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := allTrue(got, ks); err != nil {
		t.Fatalf("during the rebuild: %v", err)
	}
	if present, err := g.TestAndAddString(ctx, "during"); err != nil || present {
		t.Fatalf("TestAndAdd during the rebuild = %v, %v", present, err)
	}
	close(release)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "source of truth") {
		t.Fatalf("Rebuild with a failing fill: %v", err)
	}
	// The old generation is still live, with everything.
	got, err = g.TestMany(ctx, append(ks, []byte("during")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := allTrue(got, append(ks, []byte("during"))); err != nil {
		t.Fatalf("after the failed rebuild: %v", err)
	}
	if info, err := g.Info(ctx); err != nil || info.Rebuilding {
		t.Fatalf("after the failed rebuild: %+v, %v", info, err)
	}
	assertNoStrays(t, ctx, b, f)

	// A rebuilder that dies after retiring the shards.
	st, err := f.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.retire(ctx, &st.live, st.epoch, st.epoch+1, false, "simulated"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := g.TestString(ctx, "old-1"); !errors.Is(err, ErrStale) {
		t.Errorf("Test with the rotation stuck: %v, want ErrStale", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("ErrStale after %v, want after StallTimeout (300ms)", d)
	}
	if err := f.Delete(ctx); err != nil {
		t.Fatalf("Delete of a stuck filter: %v", err)
	}
	if _, err := g.TestString(ctx, "old-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Test after Delete: %v, want ErrNotFound", err)
	}
	assertOnlyTombstones(t, ctx, f)
}

// assertOnlyTombstones checks that a deleted filter left nothing but
// tombstones (hashes that expire).
func assertOnlyTombstones(t *testing.T, ctx context.Context, f *Filter) {
	t.Helper()
	var mu sync.Mutex
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, f.opts.Prefix+":{"+f.name+"*", 100).Iterator()
		for iter.Next(ctx) {
			typ := c.Type(ctx, iter.Val()).Val()
			if ttl := c.TTL(ctx, iter.Val()).Val(); typ != "hash" || ttl <= 0 {
				mu.Lock()
				t.Errorf("left after Delete: %s (%s, TTL %v)", iter.Val(), typ, ttl)
				mu.Unlock()
			}
		}
		return iter.Err()
	}
	var err error
	switch c := f.c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// testReshard moves the slot of one of the filter's shards to another
// node with `redis-cli --cluster reshard` while clients add and test.
func testReshard(t *testing.T, b backend) {
	if b.cluster == nil {
		t.Skip("resharding needs the cluster")
	}
	ctx := ctxT(t)
	o := Options{Capacity: 200_000, ErrorRate: 0.01, ShardBytes: 16 << 10, BatchSize: 500}
	f := mustOpen(t, ctx, b.newClient(t), "reshard", o)
	// Pick the shard whose slot is nearest the low end of its node's range:
	// redis-cli reshard moves slots from there.
	st := f.st.Load()
	best, bestNode, bestCount := uint64(0), -1, 1<<30
	for s := range st.live.shards() {
		slot := keyslot.Of(f.shardKey(&st.live, s, st.epoch))
		node, err := b.cluster.Owner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		ranges, err := b.cluster.SlotRanges(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		if c := slot - ranges[0][0] + 1; slot >= ranges[0][0] && slot <= ranges[0][1] && c < bestCount {
			best, bestNode, bestCount = s, node, c
		}
	}
	key := f.shardKey(&st.live, best, st.epoch)
	slot := keyslot.Of(key)
	t.Logf("moving %d slots, up to slot %d of shard %d (%s), from node %d", bestCount, slot, best, key, bestNode)

	// Fill the shard first so that MIGRATE has data to move.
	pre := keys("pre", 100_000)
	if err := f.AddMany(ctx, pre); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		added [][]byte
		stop  atomic.Bool
		wg    sync.WaitGroup
		ops   atomic.Int64
	)
	for w := range 3 {
		g := mustOpen(t, ctx, b.newClient(t), "reshard", Options{})
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				// Writer 2 sends batches dense enough for image commands.
				batch := keys(fmt.Sprintf("live%d-%d", w, i), []int{200, 200, 4000}[w])
				if err := g.AddMany(ctx, batch); err != nil {
					t.Errorf("AddMany during reshard: %v", err)
					return
				}
				got, err := g.TestMany(ctx, pre[(i*500)%len(pre):(i*500)%len(pre)+500], nil)
				if err != nil {
					t.Errorf("TestMany during reshard: %v", err)
					return
				}
				for j, ok := range got {
					if !ok {
						t.Errorf("false negative during reshard: %q", pre[(i*500)%len(pre)+j])
						return
					}
				}
				if _, err := g.TestAndAdd(ctx, batch[0]); err != nil {
					t.Errorf("TestAndAdd during reshard: %v", err)
					return
				}
				mu.Lock()
				added = append(added, batch...)
				mu.Unlock()
				ops.Add(1)
			}
		})
	}
	// Each phase (before, during and after the reshard) sees at least 3
	// client rounds.
	rounds := func(what string) error {
		ops0 := ops.Load()
		return poll.Wait(time.Minute, func() error {
			if t.Failed() { // a client failed: stop waiting
				return nil
			}
			if n := ops.Load() - ops0; n < 3 {
				return fmt.Errorf("%s: %d client rounds", what, n)
			}
			return nil
		})
	}
	if err := rounds("before the reshard"); err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatal(err)
	}
	to := (bestNode + 1) % 3
	before := ops.Load()
	out, err := b.cluster.Reshard(ctx, bestNode, to, bestCount)
	during := ops.Load() - before
	if err == nil {
		err = rounds("after the reshard")
	}
	if err != nil {
		stop.Store(true)
		wg.Wait()
		t.Fatal(err)
	}
	t.Logf("%d client rounds during the reshard", during)
	stop.Store(true)
	wg.Wait()
	if owner, err := b.cluster.Owner(ctx, slot); err != nil || owner != to {
		t.Fatalf("slot %d is on node %d (%v) after the reshard, want %d\n%s", slot, owner, err, to, lastLines(out, 5))
	}
	t.Logf("%d client rounds ran during the reshard", ops.Load())
	all := append(pre, added...)
	got, err := f.TestMany(ctx, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("key %q lost by the reshard", all[i])
		}
	}
	// The shard's bits now live on the new node.
	n, err := b.cluster.Nodes[to].CLI(ctx, "STRLEN", key)
	if err != nil || strings.TrimSpace(n) == "0" {
		t.Errorf("STRLEN %s on node %d = %q, %v", key, to, n, err)
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
