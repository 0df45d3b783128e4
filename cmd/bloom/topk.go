package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"slices"
	"strconv"

	"github.com/bloomkit/bloomkit/topk"
)

func init() {
	register(command{name: "topk", summary: "the K most frequent lines of a stream, in fixed memory", run: runTopK})
}

var topkHelp = help{
	name:     "topk",
	synopsis: `topk [-k K] [--width W] [--depth D] [--decay F] [--field COL [--delim D]] [INPUT...]`,
	about: `Reads lines from the INPUT files ("-" or none: stdin) and prints the K most
frequent, heaviest first, one a line: the estimated count, a tab, and the
line (without its line ending; with --field, the column). Like
sort | uniq -c | sort -rn | head -K, but in fixed memory whatever the number
of distinct lines: a HeavyKeeper Top-K (RedisBloom's TOPK) of D rows of W
counters, about 8·W·D bytes. Empty lines (or columns) are not counted. Ties
print in byte order. Inputs compressed with gzip or zstd are recognised by
their first bytes.

The counts are estimates: a line alone in its counters is counted exactly;
where lines share counters, the rarer ones decay away (a clash decays a
counter of c with chance F^c) and a count may come out low. The wider the
rows, the fewer the clashes: the default width, 8·K and at least 1,024,
finds nearly every one of the true K heaviest of a skewed stream (such as
words, URLs or IP addresses) with counts within a few per cent. On a
stream where every line is about as frequent as the others, no sketch can
tell the heaviest apart.`,
	examples: `bloom topk access.log
cut -d' ' -f1 access.log | bloom topk -k 20
bloom topk -k 5 --field 2 events.csv
zcat queries.log.gz | bloom topk -k 100 --width 10000`,
}

// topkAutoWidth is the width of rows for k items when --width is not
// given: wide enough that the heaviest rarely share a counter.
func topkAutoWidth(k uint32) uint32 { return max(1024, 8*k) }

func runTopK(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("topk")
	k := fs.Uint("k", 10, "print the `K` most frequent lines")
	width := fs.Uint("width", 0, "counters `W` in each row (default 8·K, at least 1,024)")
	depth := fs.Uint("depth", topk.DefaultDepth, "rows `D` of counters: more rows, fewer wrong counts")
	decay := fs.Float64("decay", topk.DefaultDecay, "decay `F` in (0, 1]: the chance a clash decays a counter of c is F^c")
	field := fs.Int("field", 0, "count column `COL` (1 is the first) of each CSV/TSV line instead of the line")
	delim := fs.String("delim", ",", "column separator `D` for --field: one character, or tab")
	inputs, code, ok := parseFlags(fs, topkHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "topk"
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	const most = 1 << 24 // a list scanned on every line: keep it sane
	if *k < 1 || *k > most {
		return usageErr(stderr, name, "-k %d: want 1 to %s", *k, commas(most))
	}
	if given["width"] && (*width < 1 || *width > 1<<32-1) {
		return usageErr(stderr, name, "--width %d: want at least 1", *width)
	}
	if *depth < 1 || *depth > 64 {
		return usageErr(stderr, name, "--depth %d: want 1 to 64", *depth)
	}
	if !(*decay > 0 && *decay <= 1) {
		return usageErr(stderr, name, "--decay %v: want a number above 0, at most 1", *decay)
	}
	w := uint32(*width)
	if !given["width"] {
		w = topkAutoWidth(uint32(*k))
	}
	spec, err := parseFieldFlags(fs, *field, *delim)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	if err := checkInputs(inputs); err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if err := checkMemory(uint64(w)*uint64(*depth)*8, func(uint64) string { return "give a smaller --width or --depth" }); err != nil {
		return failf(stderr, name, "--width %d --depth %d: %v", w, *depth, err)
	}
	tk, err := topk.New(uint32(*k), w, uint32(*depth), *decay)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	err = eachKey(name, inputs, stdin, stderr, spec, func(key []byte, _ int64) error {
		tk.Add(key)
		return nil
	})
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	list := tk.List()
	slices.SortStableFunc(list, func(a, b topk.Item) int {
		if a.Count != b.Count {
			if a.Count > b.Count {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.Item, b.Item)
	})
	bw := bufio.NewWriter(stdout)
	for _, it := range list {
		bw.WriteString(strconv.FormatUint(uint64(it.Count), 10))
		bw.WriteByte('\t')
		bw.Write(it.Item)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return failf(stderr, name, "stdout: %v", err)
	}
	return exitOK
}
