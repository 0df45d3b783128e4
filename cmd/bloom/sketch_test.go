package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// topk counts lines exactly while no two share counters: on a small input
// its list is sort | uniq -c | sort -rn | head, ties in byte order.
func TestTopKExact(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	in := "apple\nbanana\napple\r\ncherry\n\napple\nbanana\ndate\nfig\nfig"
	r := bloomIn(t, dir, in, "topk", "-k", "3").want(t, exitOK, "topk")
	if want := "3\tapple\n2\tbanana\n2\tfig\n"; r.stdout != want {
		t.Errorf("topk -k 3:\n%s\nwant:\n%s", r.stdout, want)
	}
	// Fewer distinct lines than K: all of them, in order.
	r = bloomIn(t, dir, "b\na\nb\n", "topk").want(t, exitOK, "topk of two")
	if want := "2\tb\n1\ta\n"; r.stdout != want {
		t.Errorf("topk of two lines: %q, want %q", r.stdout, want)
	}
	// Files and stdin together, a gzipped file, and a column of a CSV.
	writeFile(t, dir, "a.txt", "x\ny\nx\n")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("y\ny\nz\n"))
	zw.Close()
	writeFile(t, dir, "b.gz", gz.String())
	r = bloomIn(t, dir, "x\n", "topk", "-k", "2", "a.txt", "b.gz", "-").want(t, exitOK, "topk of files")
	if want := "3\tx\n3\ty\n"; r.stdout != want {
		t.Errorf("topk of files: %q, want %q", r.stdout, want)
	}
	writeFile(t, dir, "ev.csv", "1,login\n2,\"view, list\"\n3,login\n4,\"view, list\"\n5,login\n6\n")
	r = bloomIn(t, dir, "", "topk", "--field", "2", "ev.csv").want(t, exitOK, "topk --field")
	if want := "3\tlogin\n2\tview, list\n"; r.stdout != want {
		t.Errorf("topk --field 2: %q, want %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "warning: ev.csv: 1 line has no column 2 (the first is line 6); skipped") {
		t.Errorf("topk --field: no warning for the short line: %q", r.stderr)
	}
	// Nothing to count: nothing printed.
	r = bloomIn(t, dir, "\n\n", "topk").want(t, exitOK, "topk of nothing")
	if r.stdout != "" {
		t.Errorf("topk of empty lines: %q", r.stdout)
	}
}

// zipfLines returns n lines "item<i>" drawn from a Zipf distribution of
// exponent s over distinct items, and each item's true count.
func zipfLines(n int, s float64, distinct uint64, seed uint64) (string, map[string]int) {
	r := rand.New(rand.NewPCG(seed, seed+1))
	// math/rand/v2 has no Zipf; invert the CDF over the distinct items.
	cdf := make([]float64, distinct)
	sum := 0.0
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), s)
		cdf[i] = sum
	}
	var b strings.Builder
	counts := map[string]int{}
	for range n {
		i := sort.SearchFloat64s(cdf, r.Float64()*sum)
		// Item names do not sort by weight, so the hash sees no pattern.
		item := fmt.Sprintf("item-%x", uint64(i)*0x9e3779b97f4a7c15)
		counts[item]++
		b.WriteString(item)
		b.WriteByte('\n')
	}
	return b.String(), counts
}

// On a skewed stream far larger than the sketch, topk's defaults find
// the true heaviest items with counts close to the truth.
func TestTopKZipfRecall(t *testing.T) {
	outputOnly(t)
	const k = 20
	in, counts := zipfLines(300_000, 1.1, 200_000, 7)
	type kv struct {
		item  string
		count int
	}
	var truth []kv
	for it, c := range counts {
		truth = append(truth, kv{it, c})
	}
	slices.SortFunc(truth, func(a, b kv) int { return b.count - a.count })
	r := bloomIn(t, t.TempDir(), in, "topk", "-k", strconv.Itoa(k)).want(t, exitOK, "topk of a zipf stream")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != k {
		t.Fatalf("topk -k %d printed %d lines:\n%s", k, len(lines), r.stdout)
	}
	got := map[string]int{}
	for _, l := range lines {
		c, item, ok := strings.Cut(l, "\t")
		n, err := strconv.Atoi(c)
		if !ok || err != nil {
			t.Fatalf("bad line %q", l)
		}
		got[item] = n
	}
	found := 0
	for _, e := range truth[:k] {
		c, ok := got[e.item]
		if !ok {
			continue
		}
		found++
		if math.Abs(float64(c-e.count)) > 0.05*float64(e.count) {
			t.Errorf("%s: count %d, true count %d (more than 5%% off)", e.item, c, e.count)
		}
	}
	if found < k*9/10 {
		t.Errorf("recall %d of the true top %d, want at least 90%%\n%s", found, k, r.stdout)
	}
	t.Logf("recall %d/%d", found, k)
}

func TestTopKErrors(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-k", "0"}, "-k 0: want 1"},
		{[]string{"--width", "0"}, "--width 0: want at least 1"},
		{[]string{"--depth", "0"}, "--depth 0: want 1 to 64"},
		{[]string{"--decay", "1.5"}, "--decay 1.5: want a number above 0, at most 1"},
		{[]string{"--decay", "0"}, "--decay 0: want a number above 0"},
		{[]string{"--field", "0"}, "--field 0: columns are numbered from 1"},
		{[]string{"-", "-"}, "stdin (-) is named 2 times"},
		{[]string{"missing.txt"}, "missing.txt: no such file or directory"},
	} {
		r := bloomIn(t, dir, "a\n", append([]string{"topk"}, c.args...)...).want(t, exitError, strings.Join(c.args, " "))
		if !strings.HasPrefix(r.stderr, "bloom topk: ") || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("topk %v: stderr %q, want %q", c.args, r.stderr, c.msg)
		}
		if r.stdout != "" {
			t.Errorf("topk %v printed %q", c.args, r.stdout)
		}
	}
}

// On a few values quantile answers exact ranks; count, min and max are
// exact always.
func TestQuantileExact(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	// 1..10 shuffled, with blanks around numbers, an empty line, CRLF and
	// the forms ParseFloat reads.
	in := "7\n 3\n\n10\r\n1e0\n0x1p1\n5\n4.0\n9\n8\t\n6"
	r := bloomIn(t, dir, in, "quantile", "-q", "0,0.1,25%,0.5,0.75,0.9,0.999,1").want(t, exitOK, "quantile")
	want := "count   10\nmin      1\np0       1\np10      2\np25      3\np50      6\np75      8\np90     10\np99.9   10\np100    10\nmax     10\n"
	if r.stdout != want {
		t.Errorf("quantile of 1..10:\n%s\nwant:\n%s", r.stdout, want)
	}
	// The rank rule holds for a few dozen values: q is the value of rank
	// floor(q*n)+1.
	var b strings.Builder
	vals := make([]float64, 30)
	for i := range vals {
		vals[i] = float64((i*17)%30) * 1.5
		fmt.Fprintf(&b, "%g\n", vals[i])
	}
	slices.Sort(vals)
	r = bloomIn(t, dir, b.String(), "quantile", "-q", "0.2,0.5,0.95").want(t, exitOK, "quantile of 30")
	var tb strings.Builder
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	writeTable(&tb, [][]string{{"count", "30"}, {"min", "0"}, {"p20", g(vals[6])}, {"p50", g(vals[15])}, {"p95", g(vals[28])}, {"max", g(vals[29])}})
	want = tb.String()
	if r.stdout != want {
		t.Errorf("quantile of 30 values:\n%s\nwant:\n%s", r.stdout, want)
	}
	// One value: every quantile is that value (a t-digest alone would say NaN).
	r = bloomIn(t, dir, "-2.5\n", "quantile").want(t, exitOK, "quantile of one")
	if want := "count      1\nmin     -2.5\np50     -2.5\np90     -2.5\np99     -2.5\nmax     -2.5\n"; r.stdout != want {
		t.Errorf("quantile of one value:\n%s\nwant:\n%s", r.stdout, want)
	}
	// No value: count 0 and exit 1.
	r = bloomIn(t, dir, "\n \n", "quantile").want(t, exitNo, "quantile of nothing")
	if r.stdout != "count   0\n" || r.stderr != "" {
		t.Errorf("quantile of nothing: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	// A column, from two files.
	writeFile(t, dir, "a.tsv", "x\t1\ny\t2\n")
	writeFile(t, dir, "b.tsv", "z\t3\n")
	r = bloomIn(t, dir, "", "quantile", "--field", "2", "--delim", "tab", "-q", "0.5", "a.tsv", "b.tsv").want(t, exitOK, "quantile --field")
	if want := "count   3\nmin     1\np50     2\nmax     3\n"; r.stdout != want {
		t.Errorf("quantile --field:\n%s\nwant:\n%s", r.stdout, want)
	}
}

// On many values each printed quantile has a rank within the t-digest's
// bound of q·n: 2% in the middle, 0.3% in the tails.
func TestQuantileAccuracy(t *testing.T) {
	outputOnly(t)
	const n = 200_000
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, n)
	var b strings.Builder
	for i := range vals {
		vals[i] = math.Round(math.Exp(r.NormFloat64()*1.5+3)*1000) / 1000 // log-normal latencies
		b.WriteString(strconv.FormatFloat(vals[i], 'f', -1, 64))
		b.WriteByte('\n')
	}
	slices.Sort(vals)
	qs := []float64{0.001, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999}
	var qarg []string
	for _, q := range qs {
		qarg = append(qarg, strconv.FormatFloat(q, 'f', -1, 64))
	}
	res := bloomIn(t, t.TempDir(), b.String(), "quantile", "-q", strings.Join(qarg, ",")).want(t, exitOK, "quantile")
	got := map[string]float64{}
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[1], 64)
		if len(f) != 2 || err != nil {
			t.Fatalf("bad line %q", l)
		}
		got[f[0]] = v
	}
	if got["count"] != n || got["min"] != vals[0] || got["max"] != vals[n-1] {
		t.Errorf("count %v min %v max %v, want %d %v %v", got["count"], got["min"], got["max"], n, vals[0], vals[n-1])
	}
	for _, q := range qs {
		v, ok := got[percentileName(q)]
		if !ok {
			t.Fatalf("no %s in\n%s", percentileName(q), res.stdout)
		}
		// The ranks v may have: from the values below it to those up to it.
		lo := float64(sort.SearchFloat64s(vals, v))
		hi := float64(sort.Search(n, func(i int) bool { return vals[i] > v }))
		bound := 0.02
		if q < 0.01 || q > 0.99 {
			bound = 0.003
		}
		if want := q * n; want < lo-bound*n || want > hi+bound*n {
			t.Errorf("%s = %v has ranks %v to %v, want within %v of %v", percentileName(q), v, lo, hi, bound*n, want)
		}
	}
}

func TestQuantileErrors(t *testing.T) {
	outputOnly(t)
	dir := t.TempDir()
	writeFile(t, dir, "ms.txt", "12\n15.5\n\n14 ms\n")
	r := bloomIn(t, dir, "", "quantile", "ms.txt").want(t, exitError, "a word")
	if want := "bloom quantile: ms.txt: line 4: not a number: \"14 ms\"\n"; r.stderr != want || r.stdout != "" {
		t.Errorf("quantile of a unit: stdout %q, stderr %q, want %q", r.stdout, r.stderr, want)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		msg   string
	}{
		{"1\nNaN\n", nil, "stdin: line 2: \"NaN\" is not a finite number"},
		{"1\n2\n-Inf\n", nil, "stdin: line 3: \"-Inf\" is not a finite number"},
		{"1e400\n", nil, "stdin: line 1: \"1e400\" is out of the range of a 64-bit float"},
		{"1\n", []string{"-q", "1.5"}, "quantile \"1.5\" is not from 0 to 1"},
		{"1\n", []string{"-q", "0.5,,0.9"}, "not a quantile: \"\""},
		{"1\n", []string{"-q", "p99"}, "not a quantile: \"p99\""},
		{"1\n", []string{"--compression", "0"}, "--compression 0: want 1 to"},
		{"1\n", []string{"--field", "0"}, "--field 0: columns are numbered from 1"},
		{"1\n", []string{"nofile"}, "nofile: no such file or directory"},
	} {
		r := bloomIn(t, dir, c.stdin, append([]string{"quantile"}, c.args...)...).want(t, exitError, fmt.Sprint(c.args, c.stdin))
		if !strings.HasPrefix(r.stderr, "bloom quantile: ") || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("quantile %v of %q: stderr %q, want %q", c.args, c.stdin, r.stderr, c.msg)
		}
		if r.stdout != "" {
			t.Errorf("quantile %v of %q printed %q", c.args, c.stdin, r.stdout)
		}
	}
}

// The help of both commands says what they print and lists their flags;
// bloom help lists them.
func TestSketchCommandsHelp(t *testing.T) {
	outputOnly(t)
	r := bloomIn(t, "", "", "help").want(t, exitOK, "help")
	for _, name := range []string{"topk", "quantile"} {
		if !strings.Contains(r.stdout, "\n  "+name+" ") {
			t.Errorf("bloom help does not list %s:\n%s", name, r.stdout)
		}
	}
	for _, c := range []struct {
		name  string
		wants []string
	}{
		{"topk", []string{"bloom topk [-k K]", "the estimated count, a tab, and the\nline", "  -k K ", "  --width W ", "default 8·K, at least 1,024", "(default 7)", "(default 0.9)"}},
		{"quantile", []string{"bloom quantile [-q Q,Q,...]", "p99.9", "  -q Q,Q,...", "(default 0.5,0.9,0.99)", "(default 100)", "exits 1"}},
	} {
		r := bloomIn(t, "", "", c.name, "--help").want(t, exitOK, c.name+" --help")
		for _, w := range c.wants {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("bloom %s --help lacks %q:\n%s", c.name, w, r.stdout)
			}
		}
	}
}
