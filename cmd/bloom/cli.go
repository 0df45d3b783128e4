package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	buildversion "github.com/bloomkit/bloomkit/internal/version"
)

// This file holds what every subcommand shares: flag sets with --help and
// examples, flags for counts, rates and sizes written the way people write
// them (100M, 1e8, 1%, 128MiB), error reporting and atomic file writes.

// help describes a subcommand for its --help.
type help struct {
	name     string // subcommand name
	synopsis string // usage line(s) after "bloom "
	about    string // what it does, a few lines
	examples string // shell lines, one per line
}

// newFlags returns a flag set for a subcommand that reports nothing by itself:
// parseFlags prints help and errors.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// flagsSeen, when set, is given each flag set whose --help is printed:
// `bloom completion` learns every subcommand's flags by asking for its help.
var flagsSeen func(fs *flag.FlagSet, h help)

// parseFlags parses args, letting flags and positional arguments be mixed
// ("bloom test f.bf -v" works; "--" ends the flags). It returns the
// positional arguments, or ok = false and the exit code when the command
// must stop: 0 after printing --help to stdout, 2 after a usage error.
func parseFlags(fs *flag.FlagSet, h help, args []string, stdout, stderr io.Writer) (pos []string, code int, ok bool) {
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			if flagsSeen != nil {
				flagsSeen(fs, h)
			}
			printHelp(stdout, fs, h)
			return nil, exitOK, false
		}
		if err != nil {
			fmt.Fprintf(stderr, "bloom %s: %v\nRun 'bloom %s --help' for usage.\n", h.name, err, h.name)
			return nil, exitError, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// printHelp writes a subcommand's manual: synopsis, description, flags and
// examples.
func printHelp(w io.Writer, fs *flag.FlagSet, h help) {
	fmt.Fprintf(w, "Usage:\n")
	for _, line := range strings.Split(strings.TrimSpace(h.synopsis), "\n") {
		fmt.Fprintf(w, "  bloom %s\n", strings.TrimSpace(line))
	}
	fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(h.about))
	any := false
	fs.VisitAll(func(f *flag.Flag) {
		if !any {
			fmt.Fprintf(w, "\nFlags:\n")
			any = true
		}
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		arg, text := flag.UnquoteUsage(f)
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool {
			arg = ""
		}
		head := "  " + dash + f.Name
		if arg != "" {
			head += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			text += " (default " + f.DefValue + ")"
		}
		if len(head) <= 18 {
			fmt.Fprintf(w, "%-20s%s\n", head, text)
		} else {
			fmt.Fprintf(w, "%s\n%20s%s\n", head, "", text)
		}
	})
	if h.examples != "" {
		fmt.Fprintf(w, "\nExamples:\n")
		for _, line := range strings.Split(strings.TrimSpace(h.examples), "\n") {
			fmt.Fprintf(w, "  %s\n", strings.TrimSpace(line))
		}
	}
}

// failf reports an error for subcommand name on stderr and returns exit code
// 2. Messages name the file concerned: "bloom info: urls.bf: truncated".
func failf(stderr io.Writer, name, format string, args ...any) int {
	fmt.Fprintf(stderr, "bloom %s: %s\n", name, fmt.Sprintf(format, args...))
	return exitError
}

// usageErr reports a usage error with a pointer to --help and returns 2.
func usageErr(stderr io.Writer, name, format string, args ...any) int {
	fmt.Fprintf(stderr, "bloom %s: %s\nRun 'bloom %s --help' for usage.\n", name, fmt.Sprintf(format, args...), name)
	return exitError
}

// version is what `bloom --version` prints after "bloom ": release,
// commit, commit date, Go version and platform (package version).
func version() string { return buildversion.Get().String() }

// countFlag is a number of items: 100000000, 100_000_000, 1e8, 100M, 1.5G.
type countFlag struct {
	v   uint64
	set bool
}

func (c *countFlag) String() string {
	if c == nil || c.v == 0 {
		return ""
	}
	return commas(c.v)
}

func (c *countFlag) Set(s string) error {
	v, err := parseCount(s)
	if err != nil {
		return err
	}
	c.v, c.set = v, true
	return nil
}

// rateFlag is a probability in (0, 1): 0.01, 1%, 1e-3.
type rateFlag struct {
	v   float64
	set bool
}

func (r *rateFlag) String() string {
	if r == nil || r.v == 0 {
		return ""
	}
	return formatPlanned(r.v)
}

func (r *rateFlag) Set(s string) error {
	v, err := parseRate(s)
	if err != nil {
		return err
	}
	r.v, r.set = v, true
	return nil
}

// bitsFlag is a filter size in bits (8M, 1e9) or, with a B suffix, in bytes
// (128MiB, 1GB).
type bitsFlag struct {
	v   uint64
	set bool
}

func (b *bitsFlag) String() string {
	if b == nil || b.v == 0 {
		return ""
	}
	return strconv.FormatUint(b.v, 10)
}

func (b *bitsFlag) Set(s string) error {
	v, err := parseBits(s)
	if err != nil {
		return err
	}
	b.v, b.set = v, true
	return nil
}

var decimalSuffix = map[string]float64{"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
var binarySuffix = map[string]float64{"KI": 1 << 10, "MI": 1 << 20, "GI": 1 << 30, "TI": 1 << 40}

// splitNumber splits "1.5M" into 1.5 and "M" (upper-cased), accepting _ and ,
// as digit separators.
func splitNumber(s string) (float64, string, error) {
	t := strings.NewReplacer("_", "", ",", "").Replace(strings.TrimSpace(s))
	i := len(t)
	for i > 0 && (t[i-1] >= 'a' && t[i-1] <= 'z' || t[i-1] >= 'A' && t[i-1] <= 'Z') {
		i--
	}
	// An exponent ("1e8") is part of the number, not a suffix.
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') && i+1 < len(t) {
		i = len(t)
	}
	num, suf := t[:i], strings.ToUpper(t[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, "", fmt.Errorf("not a number: %q", s)
	}
	return v, suf, nil
}

// parseCount parses a positive item count: 100000000, 100_000_000, 1e8,
// 100M (K, M, G and T are powers of 1000).
func parseCount(s string) (uint64, error) {
	v, suf, err := splitNumber(s)
	mult, ok := decimalSuffix[suf]
	if err != nil || !ok {
		return 0, fmt.Errorf("not a count: %q (write 100000000, 1e8 or 100M)", s)
	}
	v *= mult
	if v < 0 || v > 1e18 || v != math.Trunc(v) {
		return 0, fmt.Errorf("count %q is not a whole number from 0 to 1e18", s)
	}
	return uint64(v), nil
}

// parseRate parses a false-positive rate in (0, 1): 0.01, 1%, 1e-3, 0.1%.
func parseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	t = strings.TrimSuffix(t, "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("not a rate: %q (write 0.01 or 1%%)", s)
	}
	if pct {
		v /= 100
	}
	if !(v > 0 && v < 1) {
		return 0, fmt.Errorf("rate %q is not between 0 and 1 (0%% and 100%%), exclusive", s)
	}
	return v, nil
}

// parseBits parses a size in bits (8000000, 8M, 1e9, 8Mi) or, ending in B,
// in bytes (1MB, 128MiB).
func parseBits(s string) (uint64, error) {
	v, suf, err := splitNumber(s)
	if err != nil {
		return 0, fmt.Errorf("not a size: %q (write bits as 8M or 1e9, bytes as 128MiB)", s)
	}
	bytes := strings.HasSuffix(suf, "B")
	suf = strings.TrimSuffix(suf, "B")
	mult, ok := decimalSuffix[suf]
	if !ok {
		mult, ok = binarySuffix[suf]
	}
	if !ok {
		return 0, fmt.Errorf("not a size: %q (write bits as 8M or 1e9, bytes as 128MiB)", s)
	}
	v *= mult
	if bytes {
		v *= 8
	}
	if v < 1 || v > 1<<62 || v != math.Trunc(v) {
		return 0, fmt.Errorf("size %q is not a whole number of bits", s)
	}
	return uint64(v), nil
}

// formatRate prints a rate as a percentage in plain notation with three
// significant digits: 1.00%, 15.7%, 0.159%, 0.00714% — never 7.14e-05%.
// Rates below 1e-15 print as "< 0.0000000000001%".
func formatRate(p float64) string {
	switch {
	case p <= 0:
		return "0%"
	case p >= 1:
		return "100%"
	case p < tinyRate:
		return "< 0.0000000000001%"
	}
	pc := p * 100
	// Three significant digits, keeping trailing zeros: 1.00%, 15.7%, 0.159%.
	pc, _ = strconv.ParseFloat(strconv.FormatFloat(pc, 'g', 3, 64), 64)
	decimals := max(0, 2-int(math.Floor(math.Log10(pc))))
	return strconv.FormatFloat(pc, 'f', decimals, 64) + "%"
}

// tinyRate is the rate below which the CLI prints no figure but a bound,
// in both forms: "< 0.0000000000001%" and "1 in more than 10^15".
const tinyRate = 1e-15

// oneIn prints a rate as odds with two significant digits: "1 in 14,000",
// "1 in 100", "1 in 2.3", "1 in 1.5".
func oneIn(p float64) string {
	switch {
	case p <= 0:
		return "never"
	case p >= 1:
		return "always"
	case p < tinyRate:
		return "1 in more than 10^15"
	}
	v := 1 / p
	if v < 9.95 {
		return "1 in " + strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	}
	scale := 1.0
	for v/scale >= 100 {
		scale *= 10
	}
	return "1 in " + commas(uint64(math.Round(v/scale)*scale))
}

// rateText is a rate in both forms: "0.00714% (1 in 14,000)".
func rateText(p float64) string {
	if p <= 0 || p >= 1 {
		return formatRate(p)
	}
	return formatRate(p) + " (" + oneIn(p) + ")"
}

// formatPlanned prints a rate the user gave, as short as it goes: 1%, 0.1%.
// Plain notation, never an exponent: 0.0000001%, not 1e-07%.
func formatPlanned(p float64) string {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(p*100, 'g', 12, 64), 64)
	return strconv.FormatFloat(v, 'f', -1, 64) + "%"
}

// writeTable prints rows as columns separated by three spaces, the first
// left-aligned and the others right-aligned.
func writeTable(w io.Writer, rows [][]string) error {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			default:
				b.WriteString("   " + pad + c)
			}
		}
		trimmed := strings.TrimRight(b.String(), " ")
		b.Reset()
		b.WriteString(trimmed)
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// humanBytes prints a byte count in IEC units: 512 B, 1.5 KiB, 114.3 MiB.
func humanBytes(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n), ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB"} {
		v /= 1024
		unit = u
		if v < 1024 {
			break
		}
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// commas prints n with thousands separators: 958,505,838.
func commas(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// isTerminal reports whether w is a character device such as a terminal,
// the test for showing progress.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
