package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
)

func init() {
	register(command{name: "dedup", summary: "copy stdin to stdout without the lines already seen", run: runDedup})
}

var dedupHelp = help{
	name:     "dedup",
	synopsis: `dedup [-n N] [-p RATE] [--type blocked|scalable] [--state FILE] [--field COL [--delim D]] [--stats]`,
	about: `Copies stdin to stdout, dropping every line whose key was seen before — like
awk '!seen[$0]++', but in constant memory: a blocked Bloom filter sized for N
distinct lines at rate RATE (about 15 bits a line at 0.1%). Lines are copied
unchanged; the key is the line without its line ending (or, with --field,
one CSV/TSV column). An empty key is not a key, as for build and test:
empty lines (or columns) are copied through, never dropped.

A Bloom filter never forgets a line, but may take a new line for a seen one:
at most about RATE of the distinct lines (far fewer while the filter is far
from full) are wrongly dropped. Past N distinct lines the rate climbs
quickly: a warning on stderr says so at the line where it happens
(--strict stops there, exit 2); with --field, lines without the column are
copied through and counted; --type scalable instead adds
filters as needed, keeping the rate at most RATE (memory then grows with
the distinct lines, and each lookup costs a little more).

With --state the filter is loaded from FILE before reading (if it exists)
and saved to it afterwards, atomically (a temporary file, fsynced and
renamed), so what was seen survives restarts: a crawler's frontier. A state
file keeps its own size; -n and -p only size a new one. SIGINT or SIGTERM
stops reading, flushes stdout and saves the state of the lines already
handled; if writing stdout fails, the state is left as it was.`,
	examples: `bloom dedup < urls.txt > unique.txt
bloom dedup -n 500M -p 0.01% < huge.log > unique.log
crawler --emit-links | bloom dedup --state crawled.bf | crawler --fetch
bloom dedup --field 2 --stats < events.csv > first-events.csv
tail -F access.log | bloom dedup --type scalable -n 1M --state seen.bf`,
}

func runDedup(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("dedup")
	n := &countFlag{v: 10_000_000}
	p := &rateFlag{v: 0.001}
	fs.Var(n, "n", "distinct lines `N` to size a new filter for (1e8, 100M)")
	fs.Var(p, "p", "false-positive `RATE` of a new filter: the share of new lines wrongly dropped")
	state := fs.String("state", "", "load the filter from `FILE` if it exists, save it there afterwards")
	field := fs.Int("field", 0, "the key is column `COL` (1 is the first) of each CSV/TSV line")
	delim := fs.String("delim", ",", "column separator `D` for --field: one character, or tab")
	seedFlag := fs.String("seed", "0", "hash `SEED` of a new filter: a number, or random")
	typ := fs.String("type", "blocked", "`TYPE` of a new filter: blocked, or scalable to grow past N keeping the rate")
	stats := fs.Bool("stats", false, "print counts of lines read, written and dropped to stderr at the end")
	strict := fs.Bool("strict", false, "stop with exit 2 when the filter passes N distinct lines or a line lacks the --field column")
	fb := addFeedbackFlags(fs)
	pos, code, ok := parseFlags(fs, dedupHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "dedup"
	if len(pos) > 0 {
		return usageErr(stderr, name, "unexpected argument %q: dedup reads stdin", pos[0])
	}
	spec, err := parseFieldFlags(fs, *field, *delim)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	seed, err := parseSeed(*seedFlag)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if *typ != "blocked" && *typ != "scalable" {
		return usageErr(stderr, name, "--type %q: want blocked or scalable", *typ)
	}
	showProgress, err := fb.enabled(stderr)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}

	// The filter: the state file's, or a new one. An empty state file (as
	// mktemp makes) is no state yet.
	var f testAndAdder
	planned := n.v  // distinct lines the filter is sized for; 0: it grows
	var base uint64 // distinct lines it held when loaded
	var ps bloom.Params
	if *state != "" {
		if fi, err := os.Stat(*state); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			// nothing to load
		} else if l, err := loadFilter(*state); errors.Is(err, os.ErrNotExist) {
		} else if err != nil {
			return failf(stderr, name, "state %s", describeErr(err))
		} else {
			t, ok := l.f.(testAndAdder)
			if !ok {
				return failf(stderr, name, "state %s: a %s filter cannot be used for dedup", *state, l.typeName())
			}
			f = t
			if (n.set && n.v != l.hdr.N) || (p.set && p.v != l.hdr.P) {
				fmt.Fprintf(stderr, "bloom dedup: note: %s was sized for %s lines at %s; -n and -p only size a new state file\n",
					*state, commas(l.hdr.N), formatPlanned(l.hdr.P))
			}
			planned = l.hdr.N
			if _, grows := l.f.(*bloom.Scalable); grows {
				planned = 0
			}
			if st, ok := l.f.(interface {
				ApproxCount() uint64
				Params() bloom.Params
			}); ok {
				base, ps = st.ApproxCount(), st.Params()
			}
		}
	}
	if f == nil {
		switch *typ {
		case "blocked":
			k, _ := findKind("blocked")
			if err := checkMemory(k.bits(n.v, p.v)/8, func(budget uint64) string {
				return fitSuggestion(budget, n.v, p.v, k.bits, k.rate)
			}); err != nil {
				return failf(stderr, name, "-n %s -p %s: %v", siCount(n.v), formatPlanned(p.v), err)
			}
			ps = bloom.EstimateBlocked(n.v, p.v)
			ps.Seed = seed
			b, err := bloom.NewBlockedFromParams(ps)
			if err != nil {
				return failf(stderr, name, "%v", err)
			}
			f = b
		default: // scalable
			planned = 0
			s, err := bloom.NewScalableWith(bloom.ScalableConfig{Capacity: n.v, Rate: p.v, Seed: seed})
			if err != nil {
				return failf(stderr, name, "%v", err)
			}
			f = s
		}
	}

	if *state != "" {
		if err := checkOutput(*state, nil); err != nil {
			return failf(stderr, name, "state %v", err)
		}
	}

	// With a state file, an interrupt ends the run cleanly so the state is
	// saved (a second one kills); without one, the default (die at once,
	// removing temporary files) is what users expect.
	var sig chan os.Signal
	if *state != "" {
		sig = make(chan os.Signal, 1)
		setSignalHook(sig)
		defer setSignalHook(nil)
	}

	in, err := openInput("-", stdin)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	defer in.close()
	bw := bufio.NewWriterSize(stdout, 1<<20)
	cr := newChunkReader(in.r)
	var d dedupCounts
	var lines atomic.Int64
	start := time.Now()
	prog := startProgress(showProgress, stderr, in.size, in.raw.n.Load, &lines, "lines", func() string {
		read, dropped := uint64(lines.Load()), d.droppedNow.Load()
		return fmt.Sprintf("%s kept  %s dropped", commas(read-min(read, dropped)), commas(dropped))
	})
	warned := false
	overfillMsg := func() string {
		rate := "an unknown share"
		if st, ok := statsOf(f); ok {
			rate = "about " + formatRate(st.EstimatedFPR())
		}
		return fmt.Sprintf("the filter now holds more than the %s distinct lines it was sized for (at input line %s): "+
			"%s of new lines are wrongly dropped from here, and more as it fills; use a larger -n, or --type scalable",
			commas(planned), commas(d.read), rate)
	}
	var interrupted os.Signal
	var readErr error
	strictErr := ""
loop:
	for {
		var c chunk
		var ok bool
		select {
		case c, ok = <-cr.c:
		case interrupted = <-sig:
			break loop
		}
		if !ok {
			break
		}
		if c.err != nil {
			readErr = c.err
			break
		}
		// Lines are handled up to the one that takes the filter past its
		// planned distinct lines, so the warning comes at that very line.
		for data := c.data; len(data) > 0 && strictErr == ""; {
			limit := uint64(math.MaxUint64)
			if !warned && planned > 0 {
				limit = planned - min(planned, base)
			}
			if b, ok := f.(*bloom.Blocked); ok && spec.field == 0 {
				data = d.blocked(b, data, bw, limit)
			} else {
				var err error
				if data, err = d.generic(f, spec, *strict, data, bw, limit); err != nil {
					strictErr = err.Error()
				}
			}
			if !warned && planned > 0 && (base == math.MaxUint64 || d.read-d.dropped-d.missing-d.empty > limit) {
				warned = true
				msg := overfillMsg()
				if *strict {
					strictErr = msg + " (--strict)"
				} else if prog != nil {
					prog.printf("bloom dedup: warning: %s\n", msg)
				} else {
					fmt.Fprintf(stderr, "bloom dedup: warning: %s\n", msg)
				}
			}
		}
		lines.Store(int64(d.read))
		d.droppedNow.Store(d.dropped)
		cr.release(c)
		if strictErr != "" {
			break
		}
		if len(cr.c) == 0 {
			// Caught up with the input: let what we have go downstream.
			if err := bw.Flush(); err != nil {
				prog.finish()
				return failf(stderr, name, "stdout: %v (state not saved)", err)
			}
		}
	}
	prog.finish()
	if err := bw.Flush(); err != nil {
		return failf(stderr, name, "stdout: %v (state not saved)", err)
	}
	if readErr != nil {
		return failf(stderr, name, "stdin: after line %d: %v (state not saved)", d.read, readErr)
	}
	if strictErr != "" {
		return failf(stderr, name, "%s; stopped after input line %s (state not saved)", strictErr, commas(d.read))
	}
	if *state != "" {
		if err := writeOutput(*state, stdout, func(w io.Writer) error { _, err := f.WriteTo(w); return err }); err != nil {
			return failf(stderr, name, "saving state %s: %v", *state, err)
		}
	}
	if d.missing > 0 {
		fmt.Fprintf(stderr, "bloom dedup: warning: %s lines had no column %d (the first is line %d); they were copied through, not deduplicated\n",
			commas(d.missing), spec.field, d.firstMissing)
	}
	if *stats {
		fmt.Fprintf(stderr, "bloom dedup: %s lines read, %s written, %s dropped as seen\n",
			commas(d.read), commas(d.read-d.dropped), commas(d.dropped))
	}
	if showProgress {
		s := fmt.Sprintf("bloom dedup: %s lines read, %s written, %s dropped as seen", commas(d.read), commas(d.read-d.dropped), commas(d.dropped))
		if st, ok := statsOf(f); ok {
			s += fmt.Sprintf("; filter %s distinct, rate now %s", countText(st.ApproxCount(), ps), formatRate(st.EstimatedFPR()))
		}
		fmt.Fprintf(stderr, "%s; %s\n", s, seconds(time.Since(start)))
	}
	if interrupted != nil {
		msg := "stopped by " + interrupted.String()
		if *state != "" {
			msg += fmt.Sprintf("; %s saved after %s lines", *state, commas(d.read))
		}
		return failf(stderr, name, "%s", msg)
	}
	return exitOK
}

// dedupCounts counts lines read and dropped.
type dedupCounts struct {
	read, dropped uint64
	droppedNow    atomic.Uint64 // dropped, for the progress line
	missing       uint64        // lines without the --field column
	firstMissing  uint64        // the first one's line number
	empty         uint64        // empty keys: not keys, copied through
}

// blocked is the fast path: whole lines, a blocked filter called directly.
// (Testing a group of lines first, to overlap their cache misses, measured
// slower: the second hash costs more than the misses it hides.)
// It stops after the line that makes the lines written exceed limit and
// returns the lines not yet handled.
func (d *dedupCounts) blocked(f *bloom.Blocked, data []byte, w *bufio.Writer, limit uint64) []byte {
	for len(data) > 0 {
		var line []byte
		line, data = cutLine(data)
		d.read++
		key := trimEOL(line)
		if len(key) == 0 {
			// An empty line is not a key (as for build and test): copied
			// through, never dropped.
			d.empty++
			w.Write(line)
			continue
		}
		if f.TestAndAdd(key) {
			d.dropped++
			continue
		}
		w.Write(line)
		if d.read-d.dropped-d.empty > limit {
			return data
		}
	}
	return nil
}

// generic handles any filter and --field. A line without the column is
// copied through and counted (strict: an error).
// Like blocked, it stops after the line that makes the lines written
// exceed limit.
func (d *dedupCounts) generic(f testAndAdder, spec *fieldSpec, strict bool, data []byte, w *bufio.Writer, limit uint64) ([]byte, error) {
	for len(data) > 0 {
		var line []byte
		line, data = cutLine(data)
		d.read++
		key, ok := spec.key(line)
		if !ok {
			if strict {
				return nil, fmt.Errorf("line %d has no column %d (--strict)", d.read, spec.field)
			}
			if d.missing == 0 {
				d.firstMissing = d.read
			}
			d.missing++
			w.Write(line)
			continue
		}
		if len(key) == 0 {
			d.empty++
			w.Write(line)
			continue
		}
		if f.TestAndAdd(key) {
			d.dropped++
			continue
		}
		w.Write(line)
		if d.read-d.dropped-d.missing-d.empty > limit {
			return data, nil
		}
	}
	return nil, nil
}
