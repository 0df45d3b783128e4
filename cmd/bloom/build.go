package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

func init() {
	register(command{name: "build", summary: "build a filter file from keys, one a line (or a CSV/TSV column)", run: runBuild})
}

var buildHelp = help{
	name:     "build",
	synopsis: `build [-n N] [-p RATE] [--type TYPE] [--field COL [--delim D]] -o FILE [INPUT...]`,
	about: `Reads keys, one a line, from the INPUT files ("-" or none: stdin) and writes a
filter holding them to FILE, sized for N keys at false-positive rate RATE.
Line endings (\n or \r\n) are not part of a key; empty keys are skipped.
With --field the key is that column of a CSV or TSV record (quoted columns
as in RFC 4180; a record must fit on one line).

-n may be left out when every INPUT is a file: build then counts the lines
first. FILE is written atomically (a temporary file, fsynced and renamed), so
a reader never sees half of it. A progress line (bytes read, keys/s, ETA)
is drawn on stderr when it is a terminal.

Types (--type):`,
	examples: `bloom build -n 1M -p 0.1% -o blacklist.bf blacklist.txt
zcat urls.gz | bloom build -n 100M -p 1% --type blocked -o urls.bf
bloom build -p 1% --field 2 -o emails.bf users.csv       # column 2, counted first
bloom build -n 50K --field 1 --delim tab --header -o ids.bf ids.tsv`,
}

func runBuild(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("build")
	n := &countFlag{}
	p := &rateFlag{v: 0.01}
	fs.Var(n, "n", "number of distinct keys `N` to size for (100M, 1e6); counted from the files if left out")
	fs.Var(p, "p", "false-positive `RATE` at N keys (1%, 0.001)")
	typ := fs.String("type", "classic", "filter `TYPE`: classic, blocked, counting, scalable or cuckoo")
	out := fs.String("o", "", "write the filter to `FILE` (required)")
	field := fs.Int("field", 0, "use column `COL` (1 is the first) of each CSV/TSV line as the key")
	delim := fs.String("delim", ",", "column separator `D` for --field: one character, or tab")
	header := fs.Bool("header", false, "skip the first line of each input (a CSV header)")
	seedFlag := fs.String("seed", "0", "hash `SEED`: a number, or random (filters merge only with equal seeds)")
	progressFlag := fs.String("progress", "auto", "progress on stderr: `WHEN` is auto (if a terminal), always or never")
	h := buildHelp
	for _, k := range kinds {
		h.about += fmt.Sprintf("\n  %-9s %s", k.name, k.about)
		if k.make == nil {
			h.about += " (not in this build)"
		}
	}
	inputs, code, ok := parseFlags(fs, h, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "build"
	if *out == "" {
		return usageErr(stderr, name, "-o FILE is required: where to write the filter")
	}
	k, err := findKind(*typ)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if k.make == nil {
		return failf(stderr, name, "filter type %s is not available in this build (%s is not implemented yet)", k.name, k.missing)
	}
	spec := &fieldSpec{field: *field}
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
	var showProgress bool
	switch *progressFlag {
	case "auto":
		showProgress = isTerminal(stderr)
	case "always":
		showProgress = true
	case "never":
	default:
		return usageErr(stderr, name, "--progress %q: want auto, always or never", *progressFlag)
	}
	if err := checkWritable(*out); err != nil {
		return failf(stderr, name, "%s cannot be written: %v", *out, err)
	}
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	if !n.set {
		lines, err := countLines(inputs, *header)
		if err != nil {
			return failf(stderr, name, "%v", err)
		}
		n.v = max(lines, 1)
	}

	nf, err := k.make(n.v, p.v, seed)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	var total int64
	for _, in := range inputs {
		size, ok := inputSize(in, stdin)
		if !ok {
			total = 0
			break
		}
		total += size
	}
	var done atomic.Int64 // bytes of inputs already finished
	var cur atomic.Pointer[chunkReader]
	var keys atomic.Int64
	prog := startProgress(showProgress, stderr, total, func() int64 {
		b := done.Load()
		if cr := cur.Load(); cr != nil {
			b += cr.bytes.Load()
		}
		return b
	}, &keys)

	var warnings []string // printed once the progress line is gone
	for _, in := range inputs {
		r, closeIn, err := openInput(in, stdin)
		if err != nil {
			prog.finish()
			return failf(stderr, name, "%v", err)
		}
		cr := newChunkReader(r)
		cur.Store(cr)
		res := addLines(cr, spec, *header, nf, &keys)
		closeIn()
		done.Add(cr.bytes.Load())
		cur.Store(nil)
		if res.err != nil {
			prog.finish()
			return failf(stderr, name, "%s: %v", displayName(in), res.err)
		}
		if res.missing > 0 {
			lines := fmt.Sprintf("%d lines have", res.missing)
			if res.missing == 1 {
				lines = "1 line has"
			}
			warnings = append(warnings, fmt.Sprintf("bloom build: warning: %s: %s no column %d (the first is line %d); skipped\n",
				displayName(in), lines, *field, res.firstMissing))
		}
	}
	prog.finish()
	for _, w := range warnings {
		fmt.Fprint(stderr, w)
	}

	if err := writeAtomic(*out, func(w io.Writer) error { _, err := nf.WriteTo(w); return err }); err != nil {
		return failf(stderr, name, "%s: %v", *out, err)
	}
	if st, ok := nf.WriterTo.(interface {
		ApproxCount() uint64
		EstimatedFPR() float64
	}); ok && st.ApproxCount() > n.v+n.v/20 && st.EstimatedFPR() > p.v {
		fmt.Fprintf(stderr, "bloom build: warning: %s holds about %s distinct keys, more than -n %s: its false-positive rate is about %s, not %s\n",
			*out, commas(st.ApproxCount()), commas(n.v), formatRate(st.EstimatedFPR()), formatPlanned(p.v))
	}
	return exitOK
}

// addResult is what reading one input found.
type addResult struct {
	missing      int64 // lines without the --field column
	firstMissing int64 // line number of the first
	err          error
}

// batchKeys is how many keys are handed to addMany at once.
const batchKeys = 256

// addLines adds the key of every line cr delivers to nf.
func addLines(cr *chunkReader, spec *fieldSpec, skipHeader bool, nf *newFilter, keys *atomic.Int64) addResult {
	var res addResult
	var line int64
	batch := make([][]byte, 0, batchKeys)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := nf.addMany(batch)
		keys.Add(int64(len(batch)))
		batch = batch[:0]
		return err
	}
	for {
		c, ok := cr.next()
		if !ok {
			return res
		}
		if c.err != nil {
			res.err = fmt.Errorf("line %d: %w", line+1, c.err)
			return res
		}
		for data := c.data; len(data) > 0; {
			var l []byte
			l, data = cutLine(data)
			line++
			if skipHeader && line == 1 {
				continue
			}
			key, ok := spec.key(l)
			if !ok {
				if res.missing == 0 {
					res.firstMissing = line
				}
				res.missing++
				continue
			}
			if len(key) == 0 {
				continue
			}
			if spec.inScratch(key) {
				// Overwritten by the next line: add it now, not in the batch.
				if err := nf.add(key); err != nil {
					res.err = fmt.Errorf("line %d: %w", line, err)
					return res
				}
				keys.Add(1)
				continue
			}
			batch = append(batch, key)
			if len(batch) == batchKeys {
				if err := flush(); err != nil {
					res.err = fmt.Errorf("line %d: %w", line, err)
					return res
				}
			}
		}
		if err := flush(); err != nil {
			res.err = fmt.Errorf("line %d: %w", line, err)
			return res
		}
		cr.release(c)
	}
}

// openInput opens a named input, or stdin for "-".
func openInput(name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: is a directory", name)
	}
	return f, func() { f.Close() }, nil
}

func displayName(in string) string {
	if in == "-" {
		return "stdin"
	}
	return in
}

// inputSize returns an input's size when it is a regular file.
func inputSize(name string, stdin io.Reader) (int64, bool) {
	var fi os.FileInfo
	var err error
	if name == "-" {
		f, ok := stdin.(*os.File)
		if !ok {
			return 0, false
		}
		fi, err = f.Stat()
	} else {
		fi, err = os.Stat(name)
	}
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return fi.Size(), true
}

// countLines counts the lines of the named files, for sizing a filter when
// -n is not given. stdin cannot be read twice, so it is refused.
func countLines(inputs []string, header bool) (uint64, error) {
	var total uint64
	buf := make([]byte, chunkSize)
	for _, in := range inputs {
		if in == "-" {
			return 0, fmt.Errorf("-n is required when reading stdin (the number of distinct keys to size the filter for)")
		}
		f, err := os.Open(in)
		if err != nil {
			return 0, err
		}
		var lines uint64
		last := byte('\n')
		for {
			k, err := f.Read(buf)
			if k > 0 {
				lines += uint64(bytes.Count(buf[:k], []byte{'\n'}))
				last = buf[k-1]
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return 0, fmt.Errorf("%s: %w", in, err)
			}
		}
		f.Close()
		if last != '\n' {
			lines++
		}
		if header && lines > 0 {
			lines--
		}
		total += lines
	}
	return total, nil
}
