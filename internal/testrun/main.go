// Command testrun runs go test and reports as it goes, for make test: a
// line per package when it finishes (with its time), the full output of
// every failing test, a line at least every 20 s while nothing else is
// printed (which packages and tests are running, for how long), and the
// slowest tests at the end.
//
// Usage:
//
//	testrun [-rerun-norace] [-slowest N] -- [go test flags] packages...
//
// The arguments after -- go to `go test -json`; flags must be written in
// one word (-timeout=30m), so that testrun can tell them from packages.
//
// With -rerun-norace, the top-level tests that skipped themselves with a
// message containing "without -race" (tests whose work is one goroutine,
// where the race detector has nothing to watch and only slows them down)
// run again afterwards, exactly those, with the same flags less -race. So
// every test of a package runs once, with or without the race detector.
//
// When $TESTRUN_JSON names a file, every line of go test -json is appended
// to it too, for a closer look at where the time went.
//
// The exit status is go test's: nonzero when any run failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// NoRaceMarker is what a test's skip message contains when the test is to
// run in the pass without the race detector.
const NoRaceMarker = "without -race"

// event is one line of go test -json (cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64
	Output     string
}

type testState struct {
	start  time.Time
	output []string
}

type pkgState struct {
	start   time.Time
	running map[string]*testState // tests begun and not ended, with their output
	output  []string              // the package's own lines (no test)
	norace  map[string]bool       // top-level tests to run again without -race
}

type result struct {
	pkg, test string
	elapsed   float64
}

// reporter turns the events of one go test run into lines on out.
type reporter struct {
	mu        *sync.Mutex
	out       io.Writer
	begun     time.Time
	lastPrint time.Time
	pkgs      map[string]*pkgState
	order     []string // packages in the order they finished
	norace    map[string][]string
	slow      []result
	failed    bool
}

func newReporter(out io.Writer) *reporter {
	now := time.Now()
	return &reporter{mu: new(sync.Mutex), out: out, begun: now, lastPrint: now, pkgs: map[string]*pkgState{}, norace: map[string][]string{}}
}

func (r *reporter) printf(format string, args ...any) {
	fmt.Fprintf(r.out, format, args...)
	r.lastPrint = time.Now()
}

func (r *reporter) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{start: time.Now(), running: map[string]*testState{}, norace: map[string]bool{}}
		r.pkgs[name] = p
	}
	return p
}

// line handles one line of go test's standard output.
func (r *reporter) line(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var e event
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
		r.printf("%s\n", b) // not an event: go's own messages
		return
	}
	switch e.Action {
	case "build-output":
		r.printf("%s", e.Output)
		return
	case "build-fail":
		r.failed = true
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output = append(p.output, e.Output)
		case "pass":
			r.printf("ok    %s %s\n", e.Package, secs(e.Elapsed))
			r.finish(e.Package, p)
		case "skip": // no test files, or no tests to run
			r.finish(e.Package, p)
		case "fail":
			r.failed = true
			r.printf("FAIL  %s %s\n", e.Package, secs(e.Elapsed))
			// What no test claimed: build errors, a panic or timeout
			// outside a test, TestMain's messages; and what running tests
			// printed when the binary died.
			for name, ts := range p.running {
				r.printf("--- %s (running when the package failed)\n", name)
				for _, l := range ts.output {
					r.printf("%s", l)
				}
			}
			for _, l := range p.output {
				r.printf("%s", l)
			}
			r.finish(e.Package, p)
		}
		return
	}
	switch e.Action {
	case "run":
		p.running[e.Test] = &testState{start: time.Now()}
	case "output":
		if ts := p.running[e.Test]; ts != nil {
			ts.output = append(ts.output, e.Output)
		} else {
			p.output = append(p.output, e.Output)
		}
	case "pass", "fail", "skip":
		ts := p.running[e.Test]
		delete(p.running, e.Test)
		top := !strings.Contains(e.Test, "/")
		if top && e.Action != "skip" {
			r.slow = append(r.slow, result{e.Package, e.Test, e.Elapsed})
		}
		if ts == nil {
			return
		}
		if e.Action == "fail" {
			r.failed = true
			r.printf("--- FAIL: %s %s (%s)\n", e.Package, e.Test, secs(e.Elapsed))
			for _, l := range ts.output {
				if !framing(l) {
					r.printf("%s", l)
				}
			}
		}
		if e.Action == "skip" {
			for _, l := range ts.output {
				if strings.Contains(l, NoRaceMarker) {
					top, _, _ := strings.Cut(e.Test, "/")
					p.norace[top] = true
				}
			}
		}
	}
}

func (r *reporter) finish(name string, p *pkgState) {
	for t := range p.norace {
		r.norace[name] = append(r.norace[name], t)
	}
	sort.Strings(r.norace[name])
	delete(r.pkgs, name)
	r.order = append(r.order, name)
}

// heartbeat prints what is running when nothing was printed for a while.
func (r *reporter) heartbeat(quiet time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.lastPrint) < quiet {
		return
	}
	var parts []string
	names := make([]string, 0, len(r.pkgs))
	for n := range r.pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := r.pkgs[n]
		var tests []string
		var longest time.Duration
		var longestName string
		for t, ts := range p.running {
			if strings.Contains(t, "/") {
				continue
			}
			tests = append(tests, t)
			if d := time.Since(ts.start); d >= longest {
				longest, longestName = d, t
			}
		}
		s := fmt.Sprintf("%s (%s", n, dur(time.Since(p.start)))
		if longestName != "" {
			s += fmt.Sprintf(", %s %s", longestName, dur(longest))
			if len(tests) > 1 {
				s += fmt.Sprintf(" and %d more", len(tests)-1)
			}
		}
		parts = append(parts, s+")")
	}
	if len(parts) == 0 {
		r.printf("      ... %s: building\n", dur(time.Since(r.begun)))
		return
	}
	r.printf("      ... %s: running %s\n", dur(time.Since(r.begun)), strings.Join(parts, ", "))
}

// framing reports whether l is one of go test -v's lines that only say
// which test runs (its output is printed under the test's name).
func framing(l string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

func secs(s float64) string { return fmt.Sprintf("%.1fs", s) }

func dur(d time.Duration) string { return d.Round(time.Second).String() }

// run runs go test -json with args and reports; it returns whether go test
// succeeded.
func (r *reporter) run(args []string) bool {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		return false
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testrun:", err)
		return false
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				r.heartbeat(20 * time.Second)
			}
		}
	}()
	var log io.Writer = io.Discard
	if name := os.Getenv("TESTRUN_JSON"); name != "" {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testrun:", err)
		} else {
			defer f.Close()
			log = f
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		fmt.Fprintf(log, "%s\n", sc.Bytes())
		r.line(sc.Bytes())
	}
	err = cmd.Wait()
	close(done)
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			fmt.Fprintln(os.Stderr, "testrun:", err)
		}
		return false
	}
	return !r.failed
}

func main() {
	rerun := flag.Bool("rerun-norace", false, "run the tests that skipped themselves under -race (\""+NoRaceMarker+"\") again without it")
	slowest := flag.Int("slowest", 5, "list this many of the slowest tests at the end")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testrun [-rerun-norace] [-slowest N] -- [go test flags] packages...")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	r := newReporter(os.Stdout)
	ok := r.run(args)
	if *rerun && len(r.norace) > 0 {
		var flags []string
		for _, a := range args {
			if strings.HasPrefix(a, "-") && a != "-race" && a != "-race=true" && !strings.HasPrefix(a, "-run=") {
				if !strings.Contains(a, "=") && !isBoolFlag(a) {
					fmt.Fprintf(os.Stderr, "testrun: write %s as %s=VALUE\n", a, a)
					os.Exit(2)
				}
				flags = append(flags, a)
			}
		}
		pkgs := make([]string, 0, len(r.norace))
		for p := range r.norace {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		// The packages' reruns run side by side, as go test runs packages.
		var wg sync.WaitGroup
		for _, p := range pkgs {
			tests := r.norace[p]
			r.mu.Lock()
			r.printf("      %s: %d tests without -race: %s\n", p, len(tests), strings.Join(tests, " "))
			r.mu.Unlock()
			quoted := make([]string, len(tests))
			for i, t := range tests {
				quoted[i] = regexp.QuoteMeta(t)
			}
			rr := newReporter(os.Stdout)
			rr.mu = r.mu // one lock for the lines of every run
			rr.begun = r.begun
			wg.Go(func() {
				passed := rr.run(append(append(append([]string{}, flags...), "-run=^("+strings.Join(quoted, "|")+")$"), p))
				r.mu.Lock()
				defer r.mu.Unlock()
				ok = ok && passed
				r.slow = append(r.slow, rr.slow...)
			})
		}
		wg.Wait()
	}
	if *slowest > 0 && len(r.slow) > 0 {
		sort.Slice(r.slow, func(i, j int) bool { return r.slow[i].elapsed > r.slow[j].elapsed })
		n := min(*slowest, len(r.slow))
		fmt.Printf("      slowest tests:")
		for _, s := range r.slow[:n] {
			fmt.Printf(" %s %s (%s);", s.test, secs(s.elapsed), s.pkg)
		}
		fmt.Printf(" %s in all\n", dur(time.Since(r.begun)))
	}
	if !ok {
		os.Exit(1)
	}
}

// isBoolFlag reports whether a is a go test flag that takes no value.
func isBoolFlag(a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "short", "v", "failfast", "cover", "benchmem", "json":
		return true
	}
	return false
}
