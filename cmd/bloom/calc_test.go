package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCalcGolden(t *testing.T) {
	outputOnly(t)
	cases := []struct {
		golden string
		args   []string
	}{
		{"calc-100M-1pct.txt", []string{"-n", "100M", "-p", "1%"}},
		{"calc-1e6-0.001.txt", []string{"-n", "1e6", "-p", "0.001"}},
		{"calc-10M-16MiB.txt", []string{"-n", "10M", "-m", "16MiB"}},
		{"calc-10M-m-k.txt", []string{"-n", "10_000_000", "-m", "128M", "-k", "7"}},
		{"calc-json.txt", []string{"-n", "1M", "-p", "0.1%", "--json"}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			r := bloomIn(t, "", "", append([]string{"calc"}, c.args...)...).want(t, exitOK, "calc")
			golden(t, c.golden, r.stdout)
		})
	}
}

// The three spellings of a count and the two of a rate give one answer.
func TestCalcSpellings(t *testing.T) {
	outputOnly(t)
	first := bloomIn(t, "", "", "calc", "-n", "100000000", "-p", "0.01").want(t, exitOK, "calc").stdout
	for _, args := range [][]string{
		{"-n", "100M", "-p", "1%"},
		{"-n", "1e8", "-p", "1%"},
		{"-n", "100_000_000", "-p", "0.01"},
		{"-p", "1%", "-n", "0.1G"},
	} {
		got := bloomIn(t, "", "", append([]string{"calc"}, args...)...).want(t, exitOK, "calc").stdout
		if got != first {
			t.Errorf("calc %v:\n%s\nwant\n%s", args, got, first)
		}
	}
}

func TestCalcJSONMatchesFormulas(t *testing.T) {
	outputOnly(t)
	r := bloomIn(t, "", "", "calc", "-n", "100M", "-p", "1%", "--json").want(t, exitOK, "calc --json")
	var res calcResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Layouts) != 2 {
		t.Fatalf("%d layouts", len(res.Layouts))
	}
	c, b := res.Layouts[0], res.Layouts[1]
	// The README's numbers: 100 million at 1% is 958,505,838 bits, k = 7.
	if c.Layout != "classic" || c.Bits != 958505838 || c.K != 7 || c.Bytes != (c.Bits+63)/64*8 {
		t.Errorf("classic: %+v", c)
	}
	if b.Layout != "blocked" || b.Bits%512 != 0 || b.Bits < c.Bits || b.Rate1x > 0.01 {
		t.Errorf("blocked: %+v", b)
	}
	// The classic sizing rounds k, which can leave the rate a little above p
	// (1.0039% here); the blocked sizing searches for a rate at most p.
	for _, l := range res.Layouts {
		if !(l.Rate1x <= 0.0101 && l.Rate1x < l.Rate2x && l.Rate2x < l.Rate5x && l.Rate5x < 1) {
			t.Errorf("%s: rates %v %v %v", l.Layout, l.Rate1x, l.Rate2x, l.Rate5x)
		}
	}
}

func TestCalcErrors(t *testing.T) {
	outputOnly(t)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-p", "1%"}, "-n is required"},
		{[]string{"-n", "1M"}, "give -p"},
		{[]string{"-n", "1M", "-p", "1%", "-m", "1M"}, "not both"},
		{[]string{"-n", "lots", "-p", "1%"}, `not a count: "lots"`},
		{[]string{"-n", "1.5", "-p", "1%"}, "not a whole number"},
		{[]string{"-n", "1M", "-p", "150%"}, "not between 0 and 1"},
		{[]string{"-n", "1M", "-p", "0"}, "not between 0 and 1"},
		{[]string{"-n", "1M", "-p", "x%"}, "not a rate"},
		{[]string{"-n", "1M", "-m", "12Q"}, "not a size"},
		{[]string{"-n", "1M", "-m", "1M", "-k", "65"}, "want 1 to 64"},
		{[]string{"-n", "1M", "-p", "1%", "-k", "3"}, "-k goes with -m"},
		{[]string{"-n", "1e15", "-p", "1e-9"}, "above the limit"},
		{[]string{"-n", "1M", "-p", "1%", "extra"}, `unexpected argument "extra"`},
	} {
		r := bloomIn(t, "", "", append([]string{"calc"}, c.args...)...).want(t, exitError, strings.Join(c.args, " "))
		if !strings.Contains(r.stderr, c.msg) || !strings.HasPrefix(r.stderr, "bloom calc: ") || r.stdout != "" {
			t.Errorf("calc %v: stderr %q, want it to contain %q", c.args, r.stderr, c.msg)
		}
	}
}

func TestParseCount(t *testing.T) {
	good := map[string]uint64{
		"1": 1, "100000000": 1e8, "100_000_000": 1e8, "100,000,000": 1e8, "1e8": 1e8, "1E8": 1e8,
		"100M": 1e8, "100m": 1e8, "1.5K": 1500, "2G": 2e9, "1T": 1e12, " 7 ": 7,
	}
	for s, want := range good {
		if got, err := parseCount(s); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	// 0 is a count, as for the library (New(0, p) is the smallest filter).
	if v, err := parseCount("0"); err != nil || v != 0 {
		t.Errorf("parseCount(0) = %d, %v", v, err)
	}
	for _, s := range []string{"", "-5", "1.5", "abc", "1X", "1e", "NaN", "Inf", "1e30", "0.0001K", "M"} {
		if v, err := parseCount(s); err == nil {
			t.Errorf("parseCount(%q) = %d, want an error", s, v)
		}
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]float64{"0.01": 0.01, "1%": 0.01, "0.1%": 0.001, "1e-3": 0.001, "50%": 0.5, " 2% ": 0.02}
	for s, want := range good {
		if got, err := parseRate(s); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "1", "100%", "-1%", "x", "%", "NaN", "1.5"} {
		if v, err := parseRate(s); err == nil {
			t.Errorf("parseRate(%q) = %v, want an error", s, v)
		}
	}
}

func TestParseBits(t *testing.T) {
	good := map[string]uint64{
		"8": 8, "8M": 8e6, "1e9": 1e9, "8Mi": 8 << 20, "1MB": 8e6, "128MiB": 128 << 23, "1KiB": 8192, "2B": 16,
	}
	for s, want := range good {
		if got, err := parseBits(s); err != nil || got != want {
			t.Errorf("parseBits(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "x", "1Q", "1.5", "1e40", "MiB"} {
		if v, err := parseBits(s); err == nil {
			t.Errorf("parseBits(%q) = %d, want an error", s, v)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for p, want := range map[float64]string{
		0.01: "1.00%", 0.0099993: "1.00%", 0.157: "15.7%", 0.00159: "0.159%", 1e-9: "0.000000100%", 0: "0%", 1: "100%",
		7.14e-7: "0.0000714%", 1e-20: "< 0.0000000000001%",
	} {
		if got := formatRate(p); got != want {
			t.Errorf("formatRate(%v) = %q, want %q", p, got, want)
		}
		if strings.ContainsAny(formatRate(p), "e") {
			t.Errorf("formatRate(%v) = %q: not plain notation", p, formatRate(p))
		}
	}
	for p := range map[float64]bool{8.3e-18: true, 1e-16: true} {
		if formatRate(p) != "< 0.0000000000001%" {
			t.Errorf("formatRate(%v) = %q", p, formatRate(p))
		}
	}
	for p, want := range map[float64]string{
		0.01: "1 in 100", 7.1e-5: "1 in 14,000", 0.5: "1 in 2", 0.0099993: "1 in 100", 1e-9: "1 in 1,000,000,000",
		// Above a rate of 10%, one decimal: 67.9% is not "1 in 1".
		0.679: "1 in 1.5", 0.436: "1 in 2.3", 0.157: "1 in 6.4", 0.1: "1 in 10",
		// Below 1e-15 both forms give the same bound, never 18 digits.
		8.3e-18: "1 in more than 10^15", 1e-16: "1 in more than 10^15",
	} {
		if got := oneIn(p); got != want {
			t.Errorf("oneIn(%v) = %q, want %q", p, got, want)
		}
	}
}

// TestCalcZeroKeys: calc -n 0 sizes the smallest filter, as bloom.New(0, p)
// does (it used to be a usage error), and build -n 0 warns as soon as the
// filter holds more.
func TestCalcZeroKeys(t *testing.T) {
	outputOnly(t)
	r := bloomIn(t, "", "", "calc", "-n", "0", "-p", "1%").want(t, exitOK, "calc -n 0")
	if !strings.Contains(r.stdout, "0 keys at a false-positive rate of 1%") || !strings.Contains(r.stdout, "classic") {
		t.Errorf("calc -n 0:\n%s", r.stdout)
	}
	r = bloomIn(t, t.TempDir(), keys("z", 100), "build", "-n", "0", "-o", "z.bf", "-").want(t, exitOK, "build -n 0")
	if !strings.Contains(r.stderr, "more than -n 0") {
		t.Errorf("build -n 0 with 100 keys: %q", r.stderr)
	}
}
