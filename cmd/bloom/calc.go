package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/bloomkit/bloomkit/bloom"
)

func init() {
	register(command{name: "calc", summary: "size a filter: bits, bytes, probes; the rate if it is overfilled", run: runCalc})
}

var calcHelp = help{
	name: "calc",
	synopsis: `calc -n N -p RATE [--curve] [--json]
calc -n N -m BITS [-k K] [--curve] [--json]`,
	about: `Prints what a filter for N keys costs, for the classic layout and the
blocked one (one cache line a lookup, a few percent more bits): its size in
bits and bytes, the number of probes k, bits per key, and the false-positive
rate at N keys (also as odds, "1 in 14,000") and at 2x and 5x N, so you see
what overfilling costs. --curve adds the rate as the filter fills, from N/4
to 4N keys, as a table and a chart (log scale).

With -p the filter is sized for that rate. With -m (and optionally -k) the
size is yours and calc gives the rate. Counts accept 100000000, 1e8, 100M
(K, M, G, T are powers of 1000); rates 0.01 or 1%; sizes in bits (8M, 1e9)
or in bytes with a B (128MiB, 1GB).`,
	examples: `bloom calc -n 100M -p 1%
bloom calc -n 1e6 -p 0.001
bloom calc -n 10M -m 16MiB          # the rate of a 16 MiB filter
bloom calc -n 10M -m 128M -k 7 --json
bloom calc -n 1M -p 0.1% --curve`,
}

// calcLayout is one row of calc's table.
type calcLayout struct {
	Layout     string  `json:"layout"`
	Bits       uint64  `json:"bits"`
	Bytes      uint64  `json:"bytes"`
	K          uint32  `json:"k"`
	BitsPerKey float64 `json:"bits_per_key"`
	Rate1x     float64 `json:"rate_1x"`
	Rate2x     float64 `json:"rate_2x"`
	Rate5x     float64 `json:"rate_5x"`
	// Curve is the rate at the fills of curveFills, with --curve.
	Curve []curvePoint `json:"curve,omitempty"`
}

// curvePoint is the rate of a layout holding Keys keys.
type curvePoint struct {
	Keys uint64  `json:"keys"`
	Rate float64 `json:"rate"`
}

// curveFills are the fills --curve shows, as fractions of N.
var curveFills = []float64{0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3, 4}

// calcResult is calc's whole answer, as --json prints it.
type calcResult struct {
	N       uint64       `json:"n"`
	P       float64      `json:"p,omitempty"`
	M       uint64       `json:"m,omitempty"`
	K       uint32       `json:"k,omitempty"`
	Layouts []calcLayout `json:"layouts"`
}

func runCalc(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("calc")
	var n countFlag
	var p rateFlag
	var m bitsFlag
	fs.Var(&n, "n", "number of distinct keys `N` planned (100M, 1e8, 100000000)")
	fs.Var(&p, "p", "false-positive `RATE` wanted (1%, 0.01)")
	fs.Var(&m, "m", "filter size in `BITS` (8M, 1e9) or bytes (128MiB): gives the rate")
	k := fs.Uint("k", 0, "probes per key `K` with -m (default: the best for N)")
	asJSON := fs.Bool("json", false, "print JSON")
	curve := fs.Bool("curve", false, "also show the rate as the filter fills, from N/4 to 4N keys")
	pos, code, ok := parseFlags(fs, calcHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) > 0:
		return usageErr(stderr, "calc", "unexpected argument %q", pos[0])
	case !n.set:
		return usageErr(stderr, "calc", "-n is required: the number of keys the filter is for")
	case p.set && m.set:
		return usageErr(stderr, "calc", "give -p (to size the filter) or -m (to get its rate), not both")
	case !p.set && !m.set:
		return usageErr(stderr, "calc", "give -p RATE (to size the filter) or -m BITS (to get its rate)")
	case *k != 0 && !m.set:
		return usageErr(stderr, "calc", "-k goes with -m; with -p calc picks k")
	case *k > bloom.MaxK:
		return usageErr(stderr, "calc", "-k %d: want 1 to %d", *k, bloom.MaxK)
	case m.set && m.v > bloom.MaxBits:
		return usageErr(stderr, "calc", "-m %d bits is above the limit of %d (1 TiB)", m.v, uint64(bloom.MaxBits))
	}
	res := calcResult{N: n.v, P: p.v, M: m.v, K: uint32(*k)}
	var classic, blocked bloom.Params
	if p.set {
		classic, blocked = bloom.Estimate(n.v, p.v), bloom.EstimateBlocked(n.v, p.v)
		if classic.M > bloom.MaxBits {
			return failf(stderr, "calc", "%s keys at %s need %s bits, above the limit of %s (1 TiB)",
				commas(n.v), formatRate(p.v), commas(classic.M), commas(bloom.MaxBits))
		}
	} else {
		classic = bloom.Params{M: m.v, K: uint32(*k)}
		if classic.K == 0 {
			classic.K = bloom.OptimalK(m.v, n.v)
		}
		blocked = bloom.Params{M: (m.v + bloom.BlockBits - 1) / bloom.BlockBits * bloom.BlockBits, K: uint32(*k)}
		if blocked.K == 0 {
			blocked.K = bestBlockedK(blocked.M, n.v)
		}
	}
	res.Layouts = []calcLayout{
		layoutRow("classic", classic, n.v, (classic.M+63)/64*8, bloom.FalsePositiveRate),
		layoutRow("blocked", blocked, n.v, blocked.M/8, bloom.BlockedFalsePositiveRate),
	}
	if *curve {
		rates := []func(m, n uint64, k uint32) float64{bloom.FalsePositiveRate, bloom.BlockedFalsePositiveRate}
		for i := range res.Layouts {
			l := &res.Layouts[i]
			for _, f := range curveFills {
				keys := uint64(math.Round(f * float64(n.v)))
				l.Curve = append(l.Curve, curvePoint{Keys: keys, Rate: rates[i](l.Bits, keys, l.K)})
			}
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return failf(stderr, "calc", "%v", err)
		}
		return exitOK
	}
	if p.set {
		fmt.Fprintf(stdout, "%s keys at a false-positive rate of %s\n\n", commas(n.v), formatPlanned(p.v))
	} else {
		fmt.Fprintf(stdout, "%s keys in %s bits (%s)\n\n", commas(n.v), commas(m.v), humanBytes((m.v+7)/8))
	}
	rows := [][]string{{"layout", "bits", "bytes", "k", "bits/key", "rate at n", "", "at 2n", "at 5n"}}
	for _, l := range res.Layouts {
		rows = append(rows, []string{l.Layout, commas(l.Bits), humanBytes(l.Bytes), fmt.Sprint(l.K),
			fmt.Sprintf("%.2f", l.BitsPerKey), formatRate(l.Rate1x), oneIn(l.Rate1x), formatRate(l.Rate2x), formatRate(l.Rate5x)})
	}
	if err := writeTable(stdout, rows); err != nil {
		return failf(stderr, "calc", "%v", err)
	}
	if *curve {
		if err := writeCurve(stdout, res); err != nil {
			return failf(stderr, "calc", "%v", err)
		}
	}
	return exitOK
}

// chartWidth is the width of --curve's bars, in characters.
const chartWidth = 40

// writeCurve prints the rate of both layouts as the filter fills, as a
// table and a bar chart on a log scale: each bar's length is the rate's
// order of magnitude, from the smallest rate shown to 100%.
func writeCurve(w io.Writer, res calcResult) error {
	classic, blocked := res.Layouts[0].Curve, res.Layouts[1].Curve
	lo := 1.0
	for _, pts := range [][]curvePoint{classic, blocked} {
		for _, pt := range pts {
			if pt.Rate > 0 {
				lo = min(lo, pt.Rate)
			}
		}
	}
	decades := max(1, math.Ceil(-math.Log10(lo)))
	bar := func(r float64) string {
		if r <= 0 {
			return ""
		}
		frac := 1 - (-math.Log10(r))/decades
		return strings.Repeat("█", max(1, int(math.Round(frac*chartWidth))))
	}
	fmt.Fprintf(w, "\nrate as the filter fills (bars: classic, log scale from %s to 100%%)\n\n", formatRate(math.Pow(10, -decades)))
	rows := [][]string{{"keys", "fill", "classic", "", "blocked", ""}}
	for i, pt := range classic {
		rows = append(rows, []string{commas(pt.Keys), fmt.Sprintf("%gn", curveFills[i]),
			formatRate(pt.Rate), oneIn(pt.Rate), formatRate(blocked[i].Rate), oneIn(blocked[i].Rate)})
	}
	var b strings.Builder
	if err := writeTable(&b, rows); err != nil {
		return err
	}
	for i, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		if i > 0 {
			line += "   " + bar(classic[i-1].Rate)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func layoutRow(name string, ps bloom.Params, n, bytes uint64, rate func(m, n uint64, k uint32) float64) calcLayout {
	return calcLayout{
		Layout:     name,
		Bits:       ps.M,
		Bytes:      bytes,
		K:          ps.K,
		BitsPerKey: float64(ps.M) / float64(max(n, 1)),
		Rate1x:     rate(ps.M, n, ps.K),
		Rate2x:     rate(ps.M, 2*n, ps.K),
		Rate5x:     rate(ps.M, 5*n, ps.K),
	}
}

// bestBlockedK returns the probe count that gives a blocked filter of m bits
// holding n keys its lowest rate.
func bestBlockedK(m, n uint64) uint32 {
	best, bestRate := uint32(1), math.Inf(1)
	for k := uint32(1); k <= 32; k++ {
		if r := bloom.BlockedFalsePositiveRate(m, n, k); r < bestRate {
			best, bestRate = k, r
		}
	}
	return best
}
