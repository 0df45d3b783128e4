package main

// -sketch: the Count-Min Sketch, Top-K and t-digest commands over the wire,
// bloom serve beside RedisBloom, written as a section of SKETCH.md (CMS,
// TOPK) and of TDIGEST.md (TDIGEST).

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sketchOps are the sketch commands -sketch measures, in the order each
// repetition runs them: every read follows the write that filled its key.
var sketchOps = []string{"CMS.INCRBY", "CMS.QUERY", "TOPK.ADD", "TOPK.QUERY", "TOPK.LIST", "TDIGEST.ADD", "TDIGEST.QUANTILE", "TDIGEST.CDF"}

// The keys the sketch commands run on, and how each is created.
var sketchKeys = map[string][]any{
	"cms:bench":  {"CMS.INITBYDIM", "cms:bench", "2000", "10"},
	"topk:bench": {"TOPK.RESERVE", "topk:bench", "50", "2000", "7", "0.925"},
	"td:bench":   {"TDIGEST.CREATE", "td:bench", "COMPRESSION", "100"},
}

// sketchArgs is the redis-benchmark command line for a sketch command.
func sketchArgs(op string) ([]string, bool) {
	const item = "item:__rand_int__"
	switch op {
	case "CMS.INCRBY":
		return []string{op, "cms:bench", item, "1"}, true
	case "CMS.QUERY":
		return []string{op, "cms:bench", item}, true
	case "TOPK.ADD", "TOPK.QUERY":
		return []string{op, "topk:bench", item}, true
	case "TOPK.LIST":
		return []string{op, "topk:bench"}, true
	case "TDIGEST.ADD", "TDIGEST.CDF":
		return []string{op, "td:bench", "__rand_int__"}, true
	case "TDIGEST.QUANTILE":
		return []string{op, "td:bench", "0.01", "0.5", "0.99"}, true
	}
	return nil, false
}

// sketchKey is the key a sketch command runs on, and whether op writes
// (its key is re-created empty before each of its runs).
func sketchKey(op string) (string, bool, bool) {
	switch op {
	case "CMS.INCRBY":
		return "cms:bench", true, true
	case "CMS.QUERY":
		return "cms:bench", false, true
	case "TOPK.ADD":
		return "topk:bench", true, true
	case "TOPK.QUERY", "TOPK.LIST":
		return "topk:bench", false, true
	case "TDIGEST.ADD":
		return "td:bench", true, true
	case "TDIGEST.QUANTILE", "TDIGEST.CDF":
		return "td:bench", false, true
	}
	return "", false, false
}

// accuracy is the same deterministic stream sent to both servers, and how
// their answers compare with each other and with the truth.
type accuracy struct {
	items, distinct, values int
	cmsSame, cmsQueried     int        // CMS.QUERY answers equal on both servers, of those asked
	cmsMean                 [2]float64 // mean overestimate, ours and ref
	cmsMax                  [2]int64
	topkSameList            bool   // TOPK.LIST WITHCOUNT identical
	topkRecall              [2]int // of the true top k
	topkCommon              int    // items on both lists
	topkSameCount           int    // of those, with the same count
	topkSameOrder           int    // positions holding the same item on both lists
	topkCountErr            [2]float64
	tdSame, tdAsked         int // TDIGEST.QUANTILE/CDF replies the same double, of those asked
	tdSameText              int // of those, the same text
	tdRankErr               [2]float64
	tdFirstDiff             string
}

// measureAccuracy feeds both servers the same stream: items drawn from
// Zipf(1.1) over 2^20 values into a CMS (2000 × 10) and a Top-K (50 2000 7
// 0.925), lognormal values into a t-digest (compression 100), 100 items or
// values a command, then asks both the same questions.
func measureAccuracy(ctx context.Context, ts []*target) (accuracy, error) {
	const nItems, nValues, batch, k = 200000, 200000, 100, 50
	var a accuracy
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.1, 1, 1<<20)
	truth := map[string]int64{}
	items := make([]string, nItems)
	for i := range items {
		items[i] = "i" + strconv.FormatUint(z.Uint64(), 10)
		truth[items[i]]++
	}
	values := make([]float64, nValues)
	vs := make([]string, nValues)
	for i := range values {
		values[i] = math.Exp(r.NormFloat64())
		vs[i] = strconv.FormatFloat(values[i], 'g', -1, 64)
	}
	a.items, a.distinct, a.values = nItems, len(truth), nValues
	for _, t := range ts {
		for _, c := range [][]any{{"DEL", "acc:cms", "acc:topk", "acc:td"},
			{"CMS.INITBYDIM", "acc:cms", "2000", "10"}, {"TOPK.RESERVE", "acc:topk", k, "2000", "7", "0.925"},
			{"TDIGEST.CREATE", "acc:td", "COMPRESSION", "100"}} {
			if err := t.rdb.Do(ctx, c...).Err(); err != nil {
				return a, fmt.Errorf("%s: %v: %w", t.name, c, err)
			}
		}
		p := t.rdb.Pipeline()
		for i := 0; i < nItems; i += batch {
			incr := []any{"CMS.INCRBY", "acc:cms"}
			add := []any{"TOPK.ADD", "acc:topk"}
			for _, it := range items[i : i+batch] {
				incr = append(incr, it, 1)
				add = append(add, it)
			}
			p.Do(ctx, incr...)
			p.Do(ctx, add...)
			td := []any{"TDIGEST.ADD", "acc:td"}
			for _, v := range vs[i : i+batch] {
				td = append(td, v)
			}
			p.Do(ctx, td...)
			if p.Len() >= 300 {
				if _, err := p.Exec(ctx); err != nil {
					return a, fmt.Errorf("%s: feeding the stream: %w", t.name, err)
				}
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			return a, fmt.Errorf("%s: feeding the stream: %w", t.name, err)
		}
	}

	// CMS.QUERY of every distinct item.
	distinct := make([]string, 0, len(truth))
	for it := range truth {
		distinct = append(distinct, it)
	}
	sort.Strings(distinct)
	var sum [2]float64
	for i := 0; i < len(distinct); i += 1000 {
		q := []any{"CMS.QUERY", "acc:cms"}
		for _, it := range distinct[i:min(i+1000, len(distinct))] {
			q = append(q, it)
		}
		var got [2][]int64
		for j, t := range ts {
			v, err := t.rdb.Do(ctx, q...).Int64Slice()
			if err != nil {
				return a, fmt.Errorf("%s: CMS.QUERY: %w", t.name, err)
			}
			got[j] = v
		}
		for x := range got[0] {
			it := q[2+x].(string)
			a.cmsQueried++
			if got[0][x] == got[1][x] {
				a.cmsSame++
			}
			for j := range 2 {
				over := got[j][x] - truth[it]
				sum[j] += float64(over)
				a.cmsMax[j] = max(a.cmsMax[j], over)
			}
		}
	}
	for j := range 2 {
		a.cmsMean[j] = sum[j] / float64(a.cmsQueried)
	}

	// TOPK.LIST WITHCOUNT against the true top k.
	top := slices.Clone(distinct)
	sort.SliceStable(top, func(i, j int) bool { return truth[top[i]] > truth[top[j]] })
	top = top[:k]
	var lists [2][]any
	for j, t := range ts {
		v, err := t.rdb.Do(ctx, "TOPK.LIST", "acc:topk", "WITHCOUNT").Slice()
		if err != nil {
			return a, fmt.Errorf("%s: TOPK.LIST: %w", t.name, err)
		}
		lists[j] = v
		listed := map[string]bool{}
		var errSum float64
		for i := 0; i+1 < len(v); i += 2 {
			it := fmt.Sprint(v[i])
			listed[it] = true
			n, _ := strconv.ParseInt(fmt.Sprint(v[i+1]), 10, 64)
			errSum += math.Abs(float64(n-truth[it])) / float64(truth[it])
		}
		a.topkCountErr[j] = errSum / float64(len(v)/2)
		for _, it := range top {
			if listed[it] {
				a.topkRecall[j]++
			}
		}
	}
	a.topkSameList = fmt.Sprint(lists[0]) == fmt.Sprint(lists[1])
	on := map[string]string{}
	for i := 0; i+1 < len(lists[0]); i += 2 {
		on[fmt.Sprint(lists[0][i])] = fmt.Sprint(lists[0][i+1])
	}
	for i := 0; i+1 < len(lists[1]); i += 2 {
		n, ok := on[fmt.Sprint(lists[1][i])]
		if ok {
			a.topkCommon++
			if n == fmt.Sprint(lists[1][i+1]) {
				a.topkSameCount++
			}
		}
		if i < len(lists[0]) && fmt.Sprint(lists[0][i]) == fmt.Sprint(lists[1][i]) {
			a.topkSameOrder++
		}
	}

	// TDIGEST.QUANTILE at 0.001 … 0.999 and TDIGEST.CDF at the true
	// quantiles, compared as the replies' text.
	sorted := slices.Clone(values)
	sort.Float64s(sorted)
	var qs []float64
	for q := 0.001; q < 0.0095; q += 0.001 {
		qs = append(qs, q)
	}
	for q := 0.01; q < 0.995; q += 0.01 {
		qs = append(qs, q)
	}
	for q := 0.991; q < 0.9995; q += 0.001 {
		qs = append(qs, q)
	}
	qa := []any{"TDIGEST.QUANTILE", "acc:td"}
	ca := []any{"TDIGEST.CDF", "acc:td"}
	for _, q := range qs {
		qa = append(qa, strconv.FormatFloat(q, 'f', 3, 64))
		ca = append(ca, strconv.FormatFloat(sorted[int(q*float64(len(sorted)))], 'g', -1, 64))
	}
	var qr, cr [2][]string
	for j, t := range ts {
		v, err := t.rdb.Do(ctx, qa...).StringSlice()
		if err != nil {
			return a, fmt.Errorf("%s: TDIGEST.QUANTILE: %w", t.name, err)
		}
		qr[j] = v
		if cr[j], err = t.rdb.Do(ctx, ca...).StringSlice(); err != nil {
			return a, fmt.Errorf("%s: TDIGEST.CDF: %w", t.name, err)
		}
		for i, s := range v {
			x, _ := strconv.ParseFloat(s, 64)
			rank := float64(sort.SearchFloat64s(sorted, x)) / float64(len(sorted))
			a.tdRankErr[j] = max(a.tdRankErr[j], math.Abs(rank-qs[i]))
		}
	}
	for i := range qs {
		for _, pair := range [][2][]string{qr, cr} {
			a.tdAsked++
			x, err0 := strconv.ParseFloat(pair[0][i], 64)
			y, err1 := strconv.ParseFloat(pair[1][i], 64)
			if pair[0][i] == pair[1][i] {
				a.tdSameText++
			}
			if err0 == nil && err1 == nil && math.Float64bits(x) == math.Float64bits(y) {
				a.tdSame++
			} else if a.tdFirstDiff == "" {
				a.tdFirstDiff = fmt.Sprintf("q %.3f: %s vs %s", qs[i], pair[0][i], pair[1][i])
			}
		}
	}
	fmt.Fprintf(os.Stderr, "accuracy: CMS %d/%d equal, TOPK list equal %v (common %d), TDIGEST %d/%d equal\n",
		a.cmsSame, a.cmsQueried, a.topkSameList, a.topkCommon, a.tdSame, a.tdAsked)
	return a, nil
}

// sketchSections writes the CMS/TOPK section into SKETCH.md and the
// TDIGEST section into TDIGEST.md (in the current directory), replacing
// an earlier one, and returns both.
func (r *report) sketchSections(acc accuracy) (string, error) {
	var out strings.Builder
	for _, f := range []struct {
		file     string
		prefixes []string
	}{{"SKETCH.md", []string{"CMS.", "TOPK."}}, {"TDIGEST.md", []string{"TDIGEST."}}} {
		sec := r.sketchSection(f.prefixes, acc)
		out.WriteString(sec)
		if r.cfg.out == "" {
			continue
		}
		old, err := os.ReadFile(f.file)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(f.file, []byte(replaceSection(string(old), sketchHeading, sec)), 0o644); err != nil {
			return "", err
		}
	}
	return out.String(), nil
}

const sketchHeading = "## Over the wire, beside RedisBloom"

// replaceSection replaces the section under heading (to the next "## "
// heading or the end) with sec, or appends sec.
func replaceSection(doc, heading, sec string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return strings.TrimRight(doc, "\n") + "\n\n" + sec
	}
	rest := doc[i+1+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		return doc[:i+1] + sec + "\n" + rest[j+1:]
	}
	return doc[:i+1] + sec
}

func (r *report) sketchSection(prefixes []string, acc accuracy) string {
	var b strings.Builder
	cfg := r.cfg
	ours, ref := r.targets[0], r.targets[1]
	rv := redisVersion(cfg.redisServer)
	has := func(op string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(op, p) {
				return true
			}
		}
		return false
	}
	b.WriteString(sketchHeading + "\n\n")
	fmt.Fprintf(&b, "Written by `%s` in bench/ on %s: bloom serve built from commit %s beside RedisBloom %s (`--loadmodule`) on %s, "+
		"in the same run, on a shared, noisy %d-core machine (the servers, redis-benchmark and other work all share it: read the ratios, not the rates); "+
		"load average %s at the start, %s at the end.\n\n",
		cfg.cmdline, time.Now().UTC().Format("2006-01-02 15:04 MST"), r.rev, r.refModule, rv, runtime.NumCPU(), r.loadStart, r.loadEnd)
	fmt.Fprintf(&b, "redis-benchmark -c %d -r %d, -n %d at -P 1 (×10 at -P 16, ÷5 for TOPK.LIST); both servers with appendonly, appendfsync %s. "+
		"Keys: `CMS.INITBYDIM cms:bench 2000 10`, `TOPK.RESERVE topk:bench 50 2000 7 0.925`, `TDIGEST.CREATE td:bench COMPRESSION 100`, re-created empty before every write run; "+
		"each read runs on what the write before it filled. Items `item:__rand_int__`, values `__rand_int__`, one a command; TDIGEST.QUANTILE asks 0.01 0.5 0.99. "+
		"%d repetitions, interleaved (every command on both servers back to back, alternating which goes first).\n\n",
		cfg.c, cfg.r, cfg.n, cfg.fsync, cfg.reps)
	b.WriteString("Medians over the repetitions. *paired* is the median of the per-repetition ratios of requests/s (ours over RedisBloom's) with their range. " +
		"*CPU s / 100k req* is the server process's user+system time (all threads, /proc/PID/stat) per 100,000 requests: the work each server does, whatever else ran; " +
		"*CPU ref/ours* above 1 means bloom serve does less.\n\n")
	b.WriteString("| command | -P | bloom serve req/s | RedisBloom req/s | paired (range) | p99 ms ours / ref | CPU s / 100k req ours / ref | CPU ref/ours (range) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range cfg.pipelines {
		for _, op := range cfg.ops {
			a, c := r.results[key{op, p, ours}], r.results[key{op, p, ref}]
			if !has(op) || a == nil || c == nil {
				continue
			}
			rps := func(s sample) float64 { return s.rps }
			p99 := func(s sample) float64 { return s.p99 }
			cpu := func(s sample) float64 { return s.cpu / 10 } // µs/req → s per 100k
			pm, lo, hi := paired(a, c)
			var cr []float64
			for i := 0; i < len(a.runs) && i < len(c.runs); i++ {
				if a.runs[i].cpu > 0 {
					cr = append(cr, c.runs[i].cpu/a.runs[i].cpu)
				}
			}
			sort.Float64s(cr)
			crs := "—"
			if len(cr) > 0 {
				crs = fmt.Sprintf("**%.2fx** (%.2f–%.2f)", median(cr), cr[0], cr[len(cr)-1])
			}
			fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %.2fx (%.2f–%.2f) | %.3f / %.3f | %.2f / %.2f | %s |\n",
				strings.Join(sketchArgsShown(op), " "), p, a.median(rps), c.median(rps), pm, lo, hi,
				a.median(p99), c.median(p99), a.median(cpu), c.median(cpu), crs)
		}
	}
	b.WriteString("\n")
	if has("CMS.") {
		fmt.Fprintf(&b, "Accuracy, same run: %d items drawn from Zipf(1.1) over 2^20 values (%d distinct, seeded), sent to both servers as `CMS.INCRBY acc:cms item 1 …` and `TOPK.ADD acc:topk item …` (100 a command) into `CMS.INITBYDIM 2000 10` and `TOPK.RESERVE 50 2000 7 0.925`.\n\n", acc.items, acc.distinct)
		fmt.Fprintf(&b, "* CMS.QUERY of every distinct item: **%d of %d answers identical** on both servers (by design: the same MurmurHash2 seeds per row, the same counters, so the same minimum). Mean / max overestimate: %.1f / %d (bloom serve), %.1f / %d (RedisBloom).\n",
			acc.cmsSame, acc.cmsQueried, acc.cmsMean[0], acc.cmsMax[0], acc.cmsMean[1], acc.cmsMax[1])
		same := "identical"
		if !acc.topkSameList {
			same = "not identical"
		}
		fmt.Fprintf(&b, "* TOPK.LIST WITHCOUNT: %s: %d of 50 items on both lists, %d of them with the same count, %d at the same position. Not identical by design: HeavyKeeper decays a shared bucket with a random draw, RedisBloom's from the C library's rand(), bloom serve's from a generator saved with the key (so a replay or replica repeats it); the lists agree where no draw decides. "+
			"Recall of the true top 50: %d/50 (bloom serve), %d/50 (RedisBloom); mean relative count error of the listed items %.4f / %.4f.\n\n",
			same, acc.topkCommon, acc.topkSameCount, acc.topkSameOrder, acc.topkRecall[0], acc.topkRecall[1], acc.topkCountErr[0], acc.topkCountErr[1])
	} else {
		fmt.Fprintf(&b, "Accuracy, same run: %d lognormal values (seeded, printed shortest round-trip) sent to both servers as `TDIGEST.ADD acc:td v …` (100 a command) into `TDIGEST.CREATE acc:td COMPRESSION 100`, then TDIGEST.QUANTILE at 117 quantiles from 0.001 to 0.999 and TDIGEST.CDF at the true values of the same quantiles.\n\n", acc.values)
		fmt.Fprintf(&b, "* **%d of %d replies the same double** on both servers (by design: the same scale function, buffer and merge rules, in the same floating-point order); %d of them the same text too: in RESP2 Redis 7.0 prints a double with %%.17g, Redis 7.2 and later (and bloom serve) with its shortest round-trip form, the same number either way.", acc.tdSame, acc.tdAsked, acc.tdSameText)
		if acc.tdFirstDiff != "" {
			fmt.Fprintf(&b, " First difference: %s.", acc.tdFirstDiff)
		}
		fmt.Fprintf(&b, " Worst rank error of the quantiles: %.4f (bloom serve), %.4f (RedisBloom).\n\n", acc.tdRankErr[0], acc.tdRankErr[1])
	}
	b.WriteString("Every run, requests/s (server CPU s / 100k req), in the order they ran:\n\n| command | -P | server | runs |\n|---|---:|---|---|\n")
	for _, p := range cfg.pipelines {
		for _, op := range cfg.ops {
			if !has(op) {
				continue
			}
			for _, s := range r.targets {
				c := r.results[key{op, p, s}]
				if c == nil {
					continue
				}
				var parts []string
				for _, x := range c.runs {
					parts = append(parts, fmt.Sprintf("%.0f (%.2f)", x.rps, x.cpu/10))
				}
				fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", op, p, s, strings.Join(parts, ", "))
			}
		}
	}
	return b.String()
}

// sketchArgsShown is the command as the table shows it.
func sketchArgsShown(op string) []string {
	a, _ := sketchArgs(op)
	return a
}
