package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/tdigest"
)

func init() {
	register(command{name: "quantile", summary: "quantiles, min and max of a stream of numbers, in fixed memory", run: runQuantile})
}

var quantileHelp = help{
	name:     "quantile",
	synopsis: `quantile [-q Q,Q,...] [--compression C] [--field COL [--delim D]] [INPUT...]`,
	about: `Reads numbers, one a line, from the INPUT files ("-" or none: stdin) and
prints how many there were, the least, the quantiles asked for and the
greatest, one a line: a name and a value. Quantiles are fractions from 0 to
1 or percentages (-q 0.5,99%,0.999) and are named as percentiles: p50, p99,
p99.9. A number is anything Go's strconv.ParseFloat reads (12, -3.5, 1e-3,
0x1p-2) with blanks around it ignored; an empty line is skipped; anything
else, or an infinity or NaN, stops with an error naming its line. With
--field the number is that column of a CSV/TSV line.

Count, min and max are exact. Quantiles come from a t-digest (the one
RedisBloom's TDIGEST uses) of about 6·C centroids, whatever the number of
values: with the default compression of 100 the value printed for q has a
rank within 2% of q·count, and within 0.3% below p1 and above p99. A few
dozen values (at compression 100) each stay their own centroid: quantile q
is then exactly the value of rank ⌊q·count⌋+1 in sorted order (the greatest
for q = 1); past that, values between centroids are interpolated.

No number read prints only "count 0" and exits 1.`,
	examples: `bloom quantile latencies.txt
bloom quantile -q 0.5,0.95,0.999 < response-ms.txt
awk '{print $NF}' access.log | bloom quantile -q 90%,99%
bloom quantile --field 3 --delim tab requests.tsv`,
}

// quantileList is the -q flag: fractions from 0 to 1, or percentages.
type quantileList []float64

func (q *quantileList) String() string {
	if q == nil {
		return ""
	}
	var parts []string
	for _, v := range *q {
		parts = append(parts, strconv.FormatFloat(v, 'f', -1, 64))
	}
	return strings.Join(parts, ",")
}

func (q *quantileList) Set(s string) error {
	var out quantileList
	for _, part := range strings.Split(s, ",") {
		t := strings.TrimSpace(part)
		pct := strings.HasSuffix(t, "%")
		v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
		if err != nil || math.IsNaN(v) {
			return fmt.Errorf("not a quantile: %q (write 0.99 or 99%%)", part)
		}
		if pct {
			v /= 100
		}
		if v < 0 || v > 1 {
			return fmt.Errorf("quantile %q is not from 0 to 1 (0%% to 100%%)", part)
		}
		out = append(out, v)
	}
	*q = out
	return nil
}

// percentileName names quantile q as a percentile: 0.5 is p50, 0.999 is
// p99.9.
func percentileName(q float64) string {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(q*100, 'g', 12, 64), 64)
	return "p" + strconv.FormatFloat(v, 'f', -1, 64)
}

// errNotNumber is the error for a line that holds no number.
var errNotNumber = errors.New("not a number")

// parseValue reads one line's number.
func parseValue(key []byte) (float64, error) {
	t := string(bytes.TrimSpace(key))
	if t == "" {
		return 0, errSkip
	}
	v, err := strconv.ParseFloat(t, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is out of the range of a 64-bit float", t)
	case err != nil:
		return 0, fmt.Errorf("%w: %q", errNotNumber, t)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%q is not a finite number", t)
	}
	return v, nil
}

// errSkip marks a blank line.
var errSkip = errors.New("blank")

func runQuantile(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("quantile")
	qs := quantileList{0.5, 0.9, 0.99}
	fs.Var(&qs, "q", "quantiles `Q,Q,...` to print: fractions (0.99) or percentages (99%)")
	compression := fs.Int("compression", tdigest.DefaultCompression, "t-digest compression `C`: more is more accurate and uses more memory (about 100·C bytes)")
	field := fs.Int("field", 0, "the number is column `COL` (1 is the first) of each CSV/TSV line")
	delim := fs.String("delim", ",", "column separator `D` for --field: one character, or tab")
	inputs, code, ok := parseFlags(fs, quantileHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "quantile"
	if *compression < 1 || *compression > 1<<20 {
		return usageErr(stderr, name, "--compression %d: want 1 to %s", *compression, commas(1<<20))
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
	d, err := tdigest.New(*compression)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	var count int64
	lo, hi := math.Inf(1), math.Inf(-1)
	err = eachKey(name, inputs, stdin, stderr, spec, func(key []byte, _ int64) error {
		v, err := parseValue(key)
		if errors.Is(err, errSkip) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := d.Add(v); err != nil {
			return err
		}
		count++
		lo, hi = min(lo, v), max(hi, v)
		return nil
	})
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	rows := [][]string{{"count", strconv.FormatInt(count, 10)}}
	if count == 0 {
		if err := writeTable(stdout, rows); err != nil {
			return failf(stderr, name, "stdout: %v", err)
		}
		return exitNo
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	rows = append(rows, []string{"min", num(lo)})
	for _, q := range qs {
		v := lo // a digest of one value answers NaN; its quantiles are that value
		if count > 1 {
			v = d.Quantile(q)
		}
		rows = append(rows, []string{percentileName(q), num(v)})
	}
	rows = append(rows, []string{"max", num(hi)})
	if err := writeTable(stdout, rows); err != nil {
		return failf(stderr, name, "stdout: %v", err)
	}
	return exitOK
}
