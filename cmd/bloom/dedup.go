package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

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
one CSV/TSV column).

A Bloom filter never forgets a line, but may take a new line for a seen one:
at most about RATE of the distinct lines (far fewer while the filter is far
from full) are wrongly dropped. Past N distinct lines the rate climbs
quickly, and a warning on stderr says so; --type scalable instead adds
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
	pos, code, ok := parseFlags(fs, dedupHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "dedup"
	if len(pos) > 0 {
		return usageErr(stderr, name, "unexpected argument %q: dedup reads stdin", pos[0])
	}
	spec := &fieldSpec{field: *field}
	var err error
	if *field < 0 {
		return usageErr(stderr, name, "--field %d: columns are numbered from 1", *field)
	}
	if spec.delim, err = parseDelim(*delim); err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	seed, err := parseSeed(*seedFlag)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if *typ != "blocked" && *typ != "scalable" {
		return usageErr(stderr, name, "--type %q: want blocked or scalable", *typ)
	}

	// The filter: the state file's, or a new blocked one.
	var f testAndAdder
	if *state != "" {
		l, err := loadFilter(*state)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return failf(stderr, name, "state %s", describeErr(err))
		default:
			t, ok := l.f.(testAndAdder)
			if !ok {
				return failf(stderr, name, "state %s: a %s filter cannot be used for dedup", *state, l.typeName())
			}
			f = t
			if (n.set && n.v != l.hdr.N) || (p.set && p.v != l.hdr.P) {
				fmt.Fprintf(stderr, "bloom dedup: note: %s was sized for %s lines at %s; -n and -p only size a new state file\n",
					*state, commas(l.hdr.N), formatPlanned(l.hdr.P))
			}
		}
	}
	if f == nil {
		switch *typ {
		case "blocked":
			ps := bloom.EstimateBlocked(n.v, p.v)
			ps.Seed = seed
			b, err := bloom.NewBlockedFromParams(ps)
			if err != nil {
				return failf(stderr, name, "%v", err)
			}
			f = b
		default: // scalable
			s, err := bloom.NewScalableWith(bloom.ScalableConfig{Capacity: n.v, Rate: p.v, Seed: seed})
			if err != nil {
				return failf(stderr, name, "%v", err)
			}
			f = s
		}
	}

	if *state != "" {
		if err := checkWritable(*state); err != nil {
			return failf(stderr, name, "state %s cannot be saved: %v", *state, err)
		}
	}

	// With a state file, an interrupt ends the run cleanly so the state is
	// saved; without one, the default (die at once) is what users expect.
	var sig chan os.Signal
	if *state != "" {
		sig = make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
	}

	bw := bufio.NewWriterSize(stdout, 1<<20)
	cr := newChunkReader(stdin)
	var d dedupCounts
	var interrupted os.Signal
	var readErr error
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
		if b, ok := f.(*bloom.Blocked); ok && spec.field == 0 {
			d.blocked(b, c.data, bw)
		} else {
			d.generic(f, spec, c.data, bw)
		}
		cr.release(c)
		if len(cr.c) == 0 {
			// Caught up with the input: let what we have go downstream.
			if err := bw.Flush(); err != nil {
				return failf(stderr, name, "stdout: %v (state not saved)", err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return failf(stderr, name, "stdout: %v (state not saved)", err)
	}
	if readErr != nil {
		return failf(stderr, name, "stdin: after line %d: %v (state not saved)", d.read, readErr)
	}
	if *state != "" {
		if err := writeAtomic(*state, func(w io.Writer) error { _, err := f.WriteTo(w); return err }); err != nil {
			return failf(stderr, name, "saving state %s: %v", *state, err)
		}
	}
	if *stats {
		fmt.Fprintf(stderr, "bloom dedup: %s lines read, %s written, %s dropped as seen\n",
			commas(d.read), commas(d.read-d.dropped), commas(d.dropped))
	}
	if st, ok := f.(interface {
		ApproxCount() uint64
		EstimatedFPR() float64
		Params() bloom.Params
	}); ok {
		ps := st.Params()
		// A scalable filter grows past N by design: only a rate above the
		// plan is worth a warning.
		if ps.N > 0 && st.ApproxCount() > ps.N+ps.N/20 && st.EstimatedFPR() > ps.P {
			where := "the filter"
			if *state != "" {
				where = *state
			}
			fmt.Fprintf(stderr, "bloom dedup: warning: %s holds about %s distinct lines, more than the %s it was sized for: "+
				"about %s of new lines are now wrongly dropped; use a larger -n\n",
				where, commas(st.ApproxCount()), commas(ps.N), formatRate(st.EstimatedFPR()))
		}
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
}

// blocked is the fast path: whole lines, a blocked filter called directly.
// (Testing a group of lines first, to overlap their cache misses, measured
// slower: the second hash costs more than the misses it hides.)
func (d *dedupCounts) blocked(f *bloom.Blocked, data []byte, w *bufio.Writer) {
	for len(data) > 0 {
		var line []byte
		line, data = cutLine(data)
		d.read++
		if f.TestAndAdd(trimEOL(line)) {
			d.dropped++
			continue
		}
		w.Write(line)
	}
}

// generic handles any filter and --field.
func (d *dedupCounts) generic(f testAndAdder, spec *fieldSpec, data []byte, w *bufio.Writer) {
	for len(data) > 0 {
		var line []byte
		line, data = cutLine(data)
		d.read++
		key, _ := spec.key(line) // a line without the column has the empty key
		if f.TestAndAdd(key) {
			d.dropped++
			continue
		}
		w.Write(line)
	}
}
