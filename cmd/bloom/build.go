package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
)

func init() {
	register(command{name: "build", summary: "build a filter file from keys, one a line (or a CSV/TSV column)", run: runBuild})
}

var buildHelp = help{
	name: "build",
	synopsis: `build [-n N] [-p RATE] [--type TYPE] [--format FORMAT] [--field COL [--delim D]] -o FILE [INPUT...]
build --static [--bits 8|16] [--field COL [--delim D]] -o FILE [INPUT...]`,
	about: `Reads keys, one a line, from the INPUT files ("-" or none: stdin) and writes a
filter holding them to FILE, sized for N keys at false-positive rate RATE.
Line endings (\n or \r\n) are not part of a key; an empty line is not a
key and is skipped (test answers absent for it, dedup copies it through).
With --field the key is that column of a CSV or TSV record (quoted columns
as in RFC 4180; a record must fit on one line).

-n may be left out when every INPUT is a regular file: build then counts
the lines first. A pipe, FIFO or stdin is read once, so it needs -n. Inputs
compressed with gzip or zstd are recognised by their first bytes.

FILE is written atomically (a temporary file, fsynced and renamed, removed
on an error or Ctrl-C); a symbolic link is followed; "-", a device or a FIFO
is written directly. An INPUT cannot be the output. A filter that does not
fit in the memory available is refused with the -n or -p that would fit.

Past N distinct keys (beyond the estimate's noise) a warning gives the rate
the filter has; --strict makes it an error. On a terminal, a progress line
and a summary are drawn on stderr (--progress, --quiet).

--static builds a frozen set: a binary fuse filter of every key read, for
sets that never change between rebuilds (about 9.0 bits a key at 0.39% with
--bits 8, where a classic filter needs 11.5). With -p it builds a ribbon
filter at that rate instead (1/2 down to 2^-32; about 1.05 × log2(1/p) bits
a key: 7.0 at 1%, where a classic filter needs 9.6), which costs slower
lookups. It needs no -n: its size follows the keys.

--format guava or bitsandblooms writes a classic Bloom filter that Java's
Guava (BloomFilter.readFrom with a stringFunnel(UTF_8) or byteArrayFunnel)
or Go's bits-and-blooms/bloom/v3 (ReadFrom) reads; bloom info and bloom test
read those files too.

Types (--type):`,
	examples: `bloom build -n 1M -p 0.1% -o blacklist.bf blacklist.txt
zcat urls.gz | bloom build -n 100M -p 1% --type blocked -o urls.bf
bloom build -p 1% --field 2 -o emails.bf users.csv       # column 2, counted first
bloom build -n 50K --field 1 --delim tab --header -o ids.bf ids.tsv
bloom build --static -o blacklist.frozen blacklist.txt
bloom build --static -p 0.1% -o blacklist.ribbon blacklist.txt
bloom build -n 1M -p 1% --format guava -o for-java.bin emails.txt`,
}

func runBuild(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("build")
	n := &countFlag{}
	p := &rateFlag{v: 0.01}
	fs.Var(n, "n", "number of distinct keys `N` to size for (100M, 1e6); counted from the files if left out")
	fs.Var(p, "p", "false-positive `RATE` at N keys (1%, 0.001)")
	typ := fs.String("type", "classic", "filter `TYPE`: classic, blocked, counting, scalable or cuckoo")
	out := fs.String("o", "", "write the filter to `FILE` (required; - for stdout)")
	field := fs.Int("field", 0, "use column `COL` (1 is the first) of each CSV/TSV line as the key")
	delim := fs.String("delim", ",", "column separator `D` for --field: one character, or tab")
	header := fs.Bool("header", false, "skip the first line of each input (a CSV header)")
	seedFlag := fs.String("seed", "0", "hash `SEED`: a number, or random (filters merge only with equal seeds)")
	formatFlag := fs.String("format", "bloomkit", "file `FORMAT`: bloomkit, guava (Java's BloomFilter.writeTo) or bitsandblooms (Go's bits-and-blooms/bloom/v3)")
	static := fs.Bool("static", false, "build a frozen set (a binary fuse filter, or with -p a ribbon filter): fewer bits, but no key can be added later")
	fpBits := fs.Int("bits", 8, "fingerprint `BITS` of --static: 8 (rate 0.39%, about 9 bits a key) or 16 (0.0015%, about 18)")
	strict := fs.Bool("strict", false, "fail (exit 2, no file written) when the keys overfill N or a line lacks the --field column")
	fb := addFeedbackFlags(fs)
	h := buildHelp
	for _, k := range kinds {
		h.about += fmt.Sprintf("\n  %-11s %s", k.name, k.about)
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
		return usageErr(stderr, name, "-o FILE is required: where to write the filter (- for stdout)")
	}
	k, err := findKind(*typ)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case *static && (given["type"] || given["format"]):
		return usageErr(stderr, name, "--static builds a frozen set in bloomkit's format: --type and --format do not apply (-p or --bits sets the rate)")
	case *static && given["p"] && given["bits"]:
		return usageErr(stderr, name, "--static takes -p (a ribbon filter at that rate) or --bits (a binary fuse filter), not both")
	case *static && given["p"]:
		if k, err = ribbonKind(p.v); err != nil {
			return usageErr(stderr, name, "%v", err)
		}
	case *static:
		if *fpBits != 8 && *fpBits != 16 {
			return usageErr(stderr, name, "--bits %d: want 8 or 16", *fpBits)
		}
		k = frozenKind(*fpBits)
	case given["bits"]:
		return usageErr(stderr, name, "--bits is the fingerprint size of --static")
	case *formatFlag != "bloomkit":
		if given["type"] && *typ != "classic" {
			return usageErr(stderr, name, "--format %s writes a classic Bloom filter: --type %s does not apply", *formatFlag, *typ)
		}
		if k, err = foreignKind(*formatFlag); err != nil {
			return usageErr(stderr, name, "%v", err)
		}
	}
	if k.make == nil {
		return failf(stderr, name, "filter type %s is not available in this build (%s is not implemented yet)", k.name, k.missing)
	}
	spec, err := parseFieldFlags(fs, *field, *delim)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	seed, err := parseSeed(*seedFlag)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	showProgress, err := fb.enabled(stderr)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	if err := checkInputs(inputs); err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if err := checkOutput(*out, inputs); err != nil {
		return failf(stderr, name, "-o %v", err)
	}
	if !n.set && !*static {
		lines, err := countLines(inputs, *header)
		if err != nil {
			return failf(stderr, name, "%v", err)
		}
		n.v = max(lines, 1)
	}
	if err := checkMemory(satMul(k.bits(n.v, p.v)/8, 1), func(budget uint64) string {
		return fitSuggestion(budget, n.v, p.v, k.bits, k.rate)
	}); err != nil {
		return failf(stderr, name, "-n %s -p %s --type %s: %v", siCount(n.v), formatPlanned(p.v), k.name, err)
	}

	nf, err := k.make(n.v, p.v, seed)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	var total int64
	for _, in := range inputs {
		size := int64(0)
		if in == "-" {
			if f, ok := stdin.(interface{ Stat() (os.FileInfo, error) }); ok {
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					size = fi.Size()
				}
			}
		} else if fi, err := os.Stat(in); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
		if size == 0 {
			total = 0
			break
		}
		total += size
	}
	var done atomic.Int64 // bytes of inputs already finished
	var cur atomic.Pointer[input]
	var keys atomic.Int64
	start := time.Now()
	prog := startProgress(showProgress, stderr, total, func() int64 {
		b := done.Load()
		if in := cur.Load(); in != nil {
			b += in.raw.n.Load()
		}
		return b
	}, &keys, "keys", nil)
	fail := func(format string, args ...any) int {
		prog.finish()
		return failf(stderr, name, format, args...)
	}

	// The overfill check: the estimate is a scan of the whole filter, so it
	// runs only once the keys read reach N, and then after every further
	// twentieth of N (or batch of keys, for a small N).
	warned := false
	var keysAtWarn int64
	nextCheck := int64(n.v)
	overfilled := func(final bool) error {
		if warned || nf.stats == nil || nf.grows || (!final && keys.Load() < nextCheck) {
			return nil
		}
		nextCheck = keys.Load() + int64(max(n.v/20, batchKeys))
		est := nf.stats.ApproxCount()
		if !overPlanned(est, max(n.v, 1), nf.params, nf.blocked, nf.exact) { // -n 0 plans the smallest filter
			return nil
		}
		warned = true
		keysAtWarn = keys.Load()
		msg := fmt.Sprintf("after %s keys read the filter %s, more than -n %s: the false-positive rate is now about %s, not %s",
			commas(uint64(keysAtWarn)), holdsText(est, nf.params), commas(n.v), formatRate(nf.stats.EstimatedFPR()), formatPlanned(p.v))
		if *strict {
			return fmt.Errorf("%s (--strict: nothing written)", msg)
		}
		if prog != nil {
			prog.printf("bloom build: warning: %s\n", msg)
		} else {
			fmt.Fprintf(stderr, "bloom build: warning: %s\n", msg)
		}
		return nil
	}

	var missingTotal int64
	for _, name := range inputs {
		in, err := openInput(name, stdin)
		if err != nil {
			return fail("%v", err)
		}
		cur.Store(in)
		cr := newChunkReader(in.r)
		res := addLines(cr, spec, *header, *strict, nf, &keys, func() error { return overfilled(false) })
		in.close()
		done.Add(in.raw.n.Load())
		cur.Store(nil)
		if res.err != nil {
			return fail("%s: %v", displayName(name), res.err)
		}
		if res.missing > 0 {
			missingTotal += res.missing
			lines := fmt.Sprintf("%s lines have", commas(uint64(res.missing)))
			if res.missing == 1 {
				lines = "1 line has"
			}
			msg := fmt.Sprintf("bloom build: warning: %s: %s no column %d (the first is line %d); skipped\n",
				displayName(name), lines, spec.field, res.firstMissing)
			if prog != nil {
				prog.printf("%s", msg)
			} else {
				fmt.Fprint(stderr, msg)
			}
		}
	}
	if err := overfilled(true); err != nil {
		return fail("%v", err)
	}
	prog.finish()
	if warned && keys.Load() > keysAtWarn {
		// The warning came mid-way; the filter kept filling since.
		fmt.Fprintf(stderr, "bloom build: warning: at the end (%s keys read) the filter %s: its false-positive rate is about %s, not %s\n",
			commas(uint64(keys.Load())), holdsText(nf.stats.ApproxCount(), nf.params), formatRate(nf.stats.EstimatedFPR()), formatPlanned(p.v))
	}

	if err := writeOutput(*out, stdout, func(w io.Writer) error { _, err := nf.WriteTo(w); return err }); err != nil {
		return failf(stderr, name, "%s: %v", *out, err)
	}
	if showProgress {
		s := fmt.Sprintf("bloom build: %s: %s keys read", outputName(*out), commas(uint64(keys.Load())))
		if nf.stats != nil {
			est := nf.stats.ApproxCount()
			s += fmt.Sprintf(", %s distinct", countText(est, nf.params))
			if nf.params.M > 0 && est > 0 && est != math.MaxUint64 {
				s += fmt.Sprintf(", %.2f bits/key", float64(nf.params.M)/float64(est))
			}
			s += ", rate about " + formatRate(nf.stats.EstimatedFPR())
		}
		fmt.Fprintf(stderr, "%s, %s\n", s, seconds(time.Since(start)))
	}
	return exitOK
}

// countText prints an estimated count: "about 1,004", or for a filter whose
// every bit is set "saturated (> 13,000)".
func countText(est uint64, ps bloom.Params) string {
	if est == math.MaxUint64 {
		return fmt.Sprintf("saturated (> %s)", commas(saturationBound(ps.M, ps.K)))
	}
	return "about " + commas(est)
}

// holdsText says how many distinct keys a filter holds: "holds about 1,004
// distinct keys", or "is saturated (> 13,000 distinct keys)".
func holdsText(est uint64, ps bloom.Params) string {
	if est == math.MaxUint64 {
		return fmt.Sprintf("is saturated (> %s distinct keys; every bit is set)", commas(saturationBound(ps.M, ps.K)))
	}
	return "holds about " + commas(est) + " distinct keys"
}

// checkInputs refuses an input list that names stdin twice: it can be read
// only once.
func checkInputs(inputs []string) error {
	seen := 0
	for _, in := range inputs {
		if in == "-" {
			seen++
		}
	}
	if seen > 1 {
		return fmt.Errorf("stdin (-) is named %d times: it can be read only once", seen)
	}
	return nil
}

// parseFieldFlags checks --field and --delim. --field 0 given explicitly is
// an error: columns are numbered from 1, and 0 would silently mean the
// whole line.
func parseFieldFlags(fs *flag.FlagSet, field int, delim string) (*fieldSpec, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "field" })
	if given && field < 1 {
		return nil, fmt.Errorf("--field %d: columns are numbered from 1 (leave --field out to use the whole line)", field)
	}
	spec := &fieldSpec{field: field}
	var err error
	if spec.delim, err = parseDelim(delim); err != nil {
		return nil, err
	}
	return spec, nil
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
// A line without the --field column is counted and skipped, or with strict
// ends the input with an error. afterChunk runs after every batch of keys
// and every chunk of lines; its error ends the input.
func addLines(cr *chunkReader, spec *fieldSpec, skipHeader, strict bool, nf *newFilter, keys *atomic.Int64, afterChunk func() error) addResult {
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
				if strict {
					res.err = fmt.Errorf("line %d has no column %d (--strict)", line, spec.field)
					return res
				}
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
				// Checked every batch, so an overfill is told within
				// batchKeys keys of happening.
				if err := afterChunk(); err != nil {
					res.err = err
					return res
				}
			}
		}
		if err := flush(); err != nil {
			res.err = fmt.Errorf("line %d: %w", line, err)
			return res
		}
		cr.release(c)
		if err := afterChunk(); err != nil {
			res.err = err
			return res
		}
	}
}
