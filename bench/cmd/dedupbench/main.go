// Command dedupbench measures `bloom dedup` against `awk '!seen[$0]++'` and
// `sort -u` on generated URL lines with a known share of duplicates, and
// writes a Markdown report. From the bench directory:
//
//	go run ./cmd/dedupbench -out DEDUP.md
//
// It builds the bloom binary from this checkout (or uses -bloom), writes the
// input to a temporary file, runs every command -runs times with that file as
// stdin and a file as stdout, and reports the best wall time (the machine
// may be shared), throughput in MB/s and lines/s, peak RSS from wait4's
// rusage, and for bloom dedup the lines wrongly dropped (false positives):
// awk's output is the exact answer, and bloom's must be the same lines in the
// same order with some missing, never one extra.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
)

type config struct {
	lines  int
	dup    float64
	rates  []float64
	n      uint64
	runs   int
	bloom  string
	out    string
	keep   bool
	tmpDir string
}

func main() {
	var c config
	var rates string
	flag.IntVar(&c.lines, "lines", 10_000_000, "number of input lines")
	flag.Float64Var(&c.dup, "dup", 0.30, "share of lines that repeat an earlier line")
	flag.StringVar(&rates, "p", "0.01,0.001", "comma-separated false-positive rates to run bloom dedup at")
	flag.Uint64Var(&c.n, "n", 0, "bloom dedup -n (default: the number of input lines, what wc -l tells a user)")
	flag.IntVar(&c.runs, "runs", 3, "runs of each command; the best is reported")
	flag.StringVar(&c.bloom, "bloom", "", "bloom binary (default: build ../cmd/bloom)")
	flag.StringVar(&c.out, "out", "DEDUP.md", "report file (- for stdout)")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	flag.StringVar(&c.tmpDir, "tmp", "", "directory for the temporary files (default: the system's)")
	flag.Parse()
	for _, s := range strings.Split(rates, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(p > 0 && p < 1) {
			fatalf("-p %q: want rates in (0, 1)", s)
		}
		c.rates = append(c.rates, p)
	}
	if c.n == 0 {
		c.n = uint64(c.lines)
	}
	if err := run(c); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dedupbench: "+format+"\n", args...)
	os.Exit(1)
}

// result is one command's best run.
type result struct {
	name    string
	cmd     string
	wall    time.Duration
	user    time.Duration
	sys     time.Duration
	rssKiB  int64
	outLine int64
	dropped int64 // wrongly dropped lines (bloom only); -1 when not applicable
	expect  float64
	p       float64
}

func run(c config) error {
	dir, err := os.MkdirTemp(c.tmpDir, "dedupbench-")
	if err != nil {
		return err
	}
	if !c.keep {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "dedupbench: files kept in %s\n", dir)
	}
	bin := c.bloom
	if bin == "" {
		bin = filepath.Join(dir, "bloom")
		if err := buildBloom(bin); err != nil {
			return err
		}
	}
	loadBefore := loadAvg()
	input := filepath.Join(dir, "urls.txt")
	fmt.Fprintf(os.Stderr, "dedupbench: writing %d lines (%.0f%% duplicates) to %s\n", c.lines, 100*c.dup, input)
	size, unique, err := generate(input, c.lines, c.dup)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dedupbench: %d bytes, %d distinct lines\n", size, unique)

	env := append(os.Environ(), "LC_ALL=C")
	awkOut := filepath.Join(dir, "awk.out")
	var results []result
	measure := func(name, shown, outPath string, argv ...string) (result, error) {
		best := result{name: name, cmd: shown, dropped: -1}
		for i := range c.runs {
			r, err := timeRun(argv, env, input, outPath)
			if err != nil {
				return best, fmt.Errorf("%s: %w", shown, err)
			}
			fmt.Fprintf(os.Stderr, "dedupbench: %-34s run %d: %v, %d MiB RSS\n", shown, i+1, r.wall.Round(time.Millisecond), r.rssKiB>>10)
			if i == 0 || r.wall < best.wall {
				best.wall, best.user, best.sys = r.wall, r.user, r.sys
			}
			best.rssKiB = max(best.rssKiB, r.rssKiB)
		}
		n, err := countLines(outPath)
		best.outLine = n
		return best, err
	}

	r, err := measure("awk", `awk '!seen[$0]++'`, awkOut, "awk", "!seen[$0]++")
	if err != nil {
		return err
	}
	if r.outLine != unique {
		return fmt.Errorf("awk wrote %d lines, the input has %d distinct ones", r.outLine, unique)
	}
	results = append(results, r)

	sortOut := filepath.Join(dir, "sort.out")
	r, err = measure("sort", "sort -u", sortOut, "sort", "-u")
	if err != nil {
		return err
	}
	results = append(results, r)

	for _, p := range c.rates {
		ps := strconv.FormatFloat(p, 'g', -1, 64)
		ns := strconv.FormatUint(c.n, 10)
		bloomOut := filepath.Join(dir, "bloom-"+ps+".out")
		r, err := measure("bloom", "bloom dedup -n "+ns+" -p "+ps, bloomOut, bin, "dedup", "-n", ns, "-p", ps)
		if err != nil {
			return err
		}
		missing, err := subsequence(bloomOut, awkOut)
		if err != nil {
			return fmt.Errorf("bloom dedup -p %s: %w", ps, err)
		}
		r.dropped, r.p = missing, p
		r.expect = expectedDrops(c.n, p, uint64(unique))
		results = append(results, r)
	}
	return report(c, results, size, unique, loadBefore+" before, "+loadAvg()+" after")
}

// loadAvg returns the 1-minute load average, which says how much the
// machine was shared while the commands ran.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(data))[0]
}

// buildBloom builds the bloom command of the checkout this module replaces
// bloomkit with.
func buildBloom(bin string) error {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/bloomkit/bloomkit").Output()
	if err != nil {
		return fmt.Errorf("finding the bloomkit module: %w", err)
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/bloom")
	cmd.Dir = strings.TrimSpace(string(out))
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building bloom in %s: %w", cmd.Dir, err)
	}
	return nil
}

// urlFor returns URL number i: a deterministic, realistic-looking line of
// 50 to 110 bytes.
func urlFor(b []byte, i uint64) []byte {
	r := rand.New(rand.NewPCG(i, 0x6465647570))
	hosts := [...]string{"www.example.com", "news.example.org", "shop.example.net", "blog.example.io", "cdn.example.co.uk"}
	words := [...]string{"article", "product", "category", "tag", "user", "search", "page", "item", "story", "video"}
	b = append(b, "https://"...)
	b = append(b, hosts[r.IntN(len(hosts))]...)
	for range 1 + r.IntN(3) {
		b = append(b, '/')
		b = append(b, words[r.IntN(len(words))]...)
	}
	b = append(b, '/')
	b = strconv.AppendUint(b, i, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, r.Uint64()%1e9, 36)
	if r.IntN(3) == 0 {
		b = append(b, "?ref="...)
		b = strconv.AppendUint(b, r.Uint64()%1e6, 10)
	}
	return append(b, '\n')
}

// generate writes lines URL lines, each with probability dup a repeat of a
// uniformly chosen earlier distinct URL, and returns the file size and the
// number of distinct lines.
func generate(path string, lines int, dup float64) (int64, int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	var distinct uint64
	var size int64
	var buf []byte
	for range lines {
		i := distinct
		if distinct > 0 && r.Float64() < dup {
			i = r.Uint64N(distinct)
		} else {
			distinct++
		}
		buf = urlFor(buf[:0], i)
		size += int64(len(buf))
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		return 0, 0, err
	}
	return size, int64(distinct), f.Close()
}

// timeRun runs argv with stdin from in and stdout to out and returns its
// wall time, CPU times and peak RSS (wait4's ru_maxrss).
func timeRun(argv, env []string, in, out string) (result, error) {
	stdin, err := os.Open(in)
	if err != nil {
		return result{}, err
	}
	defer stdin.Close()
	stdout, err := os.Create(out)
	if err != nil {
		return result{}, err
	}
	defer stdout.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout = env, stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%w: %s", err, stderr.String())
	}
	wall := time.Since(start)
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return result{}, errors.New("no rusage on this system")
	}
	return result{
		wall:   wall,
		user:   cmd.ProcessState.UserTime(),
		sys:    cmd.ProcessState.SystemTime(),
		rssKiB: ru.Maxrss, // KiB on Linux
	}, nil
}

func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// subsequence checks that every line of sub appears in full, in order, and
// returns how many lines of full are missing from sub. A line in sub that
// does not match is an error: dedup printed a duplicate or a changed line.
func subsequence(sub, full string) (int64, error) {
	fs, err := os.Open(sub)
	if err != nil {
		return 0, err
	}
	defer fs.Close()
	ff, err := os.Open(full)
	if err != nil {
		return 0, err
	}
	defer ff.Close()
	s := bufio.NewScanner(fs)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	f := bufio.NewScanner(ff)
	f.Buffer(make([]byte, 1<<20), 1<<20)
	var missing, line int64
	for s.Scan() {
		line++
		for {
			if !f.Scan() {
				return missing, fmt.Errorf("output line %d (%q) is not a first occurrence in the input's order", line, s.Text())
			}
			if bytes.Equal(f.Bytes(), s.Bytes()) {
				break
			}
			missing++
		}
	}
	for f.Scan() {
		missing++
	}
	return missing, errors.Join(s.Err(), f.Err())
}

// expectedDrops is the expected number of distinct lines a blocked filter
// sized for n at rate p takes for seen while unique distinct lines go in:
// the sum over insertions of the rate the filter has at that moment.
func expectedDrops(n uint64, p float64, unique uint64) float64 {
	ps := bloom.EstimateBlocked(n, p)
	const steps = 2000
	sum := 0.0
	for i := range steps {
		at := unique * uint64(2*i+1) / (2 * steps) // midpoint of the step
		sum += bloom.BlockedFalsePositiveRate(ps.M, at, ps.K) * float64(unique) / steps
	}
	return sum
}

func report(c config, rs []result, size, unique int64, load string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# `bloom dedup` against awk and sort\n\n")
	fmt.Fprintf(&b, "Generated by `go run ./cmd/dedupbench` (bench/cmd/dedupbench) on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Input: %s URL lines (%s, %.1f MB), %.0f%% of them repeats of an earlier line, so %s distinct lines. ",
		commas(int64(c.lines)), humanBytes(size), float64(size)/1e6, 100*c.dup, commas(unique))
	fmt.Fprintf(&b, "Each command reads the file on stdin and writes a file; best wall time of %d runs; ", c.runs)
	fmt.Fprintf(&b, "peak RSS is `ru_maxrss` from wait4. `LC_ALL=C` for all (GNU sort is several times slower in a UTF-8 locale). ")
	fmt.Fprintf(&b, "Machine: %s, %d CPUs, shared with other work while this ran (load average %s), so wall times "+
		"include waiting for a CPU; the CPU times (user+sys) are the steadier comparison. %s; awk is %s.\n\n",
		cpuModel(), runtime.NumCPU(), load, runtime.Version(), awkName())
	fmt.Fprintf(&b, "| command | wall | user+sys CPU | MB/s | lines/s | peak RSS | output lines | wrongly dropped | expected (and bound p x distinct) |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var awk result
	for _, r := range rs {
		if r.name == "awk" {
			awk = r
		}
		secs := r.wall.Seconds()
		dropped, expect := "—", "—"
		if r.dropped >= 0 {
			dropped = fmt.Sprintf("%s (%.4f%%)", commas(r.dropped), 100*float64(r.dropped)/float64(unique))
			expect = fmt.Sprintf("%s (%s)", commas(int64(r.expect+0.5)), commas(int64(r.p*float64(unique))))
		}
		fmt.Fprintf(&b, "| `%s` | %.2f s | %.2f s | %.0f | %s | %s | %s | %s | %s |\n", r.cmd, secs, (r.user + r.sys).Seconds(),
			float64(size)/1e6/secs, commas(int64(float64(c.lines)/secs)), humanBytes(r.rssKiB<<10), commas(r.outLine), dropped, expect)
	}
	fmt.Fprintf(&b, "\nAgainst awk:\n\n")
	for _, r := range rs {
		if r.name != "bloom" {
			continue
		}
		cpu := func(r result) float64 { return (r.user + r.sys).Seconds() }
		fmt.Fprintf(&b, "- `%s`: %.1fx awk's throughput (%.1fx in CPU time), %.1f%% of awk's peak memory",
			r.cmd, awk.wall.Seconds()/r.wall.Seconds(), cpu(awk)/cpu(r), 100*float64(r.rssKiB)/float64(awk.rssKiB))
		for _, s := range rs {
			if s.name == "sort" {
				fmt.Fprintf(&b, ", %.1fx sort -u's throughput (%.1fx in CPU time)", s.wall.Seconds()/r.wall.Seconds(), cpu(s)/cpu(r))
			}
		}
		fmt.Fprintf(&b, "; %s of %s distinct lines wrongly dropped, %s expected for a filter sized for %s lines at %g.\n",
			commas(r.dropped), commas(unique), commas(int64(r.expect+0.5)), commas(int64(c.n)), r.p)
	}
	fmt.Fprintf(&b, "\nGoal: at least 3x awk's throughput, above sort -u, under a tenth of awk's memory, "+
		"wrongly dropped lines within the configured rate. \"Expected\" sums the blocked filter's rate at each insertion "+
		"(BlockedFalsePositiveRate); the bound is the configured rate times the distinct lines. "+
		"sort -u's output is sorted, not in input order, so it is not a drop-in replacement; it is the usual "+
		"alternative for inputs larger than memory.\n")
	if c.out == "-" {
		_, err := io.WriteString(os.Stdout, b.String())
		return err
	}
	fmt.Fprintf(os.Stderr, "dedupbench: writing %s\n", c.out)
	return os.WriteFile(c.out, []byte(b.String()), 0o644)
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func awkName() string {
	p, err := exec.LookPath("awk")
	if err != nil {
		return "missing"
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return "`" + filepath.Base(p) + "`"
}

func humanBytes(n int64) string {
	v := float64(n)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var parts []string
	for len(s) > 3 {
		parts = append(parts, s[len(s)-3:])
		s = s[:len(s)-3]
	}
	parts = append(parts, s)
	slices.Reverse(parts)
	out := strings.Join(parts, ",")
	if neg {
		out = "-" + out
	}
	return out
}
