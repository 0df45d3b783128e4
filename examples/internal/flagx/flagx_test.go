package flagx

import (
	"flag"
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	for s, want := range map[string]uint64{"1M": 1_000_000, "1_000_000": 1_000_000, "1e6": 1_000_000, "1.5K": 1500, "5000": 5000, "2G": 2e9} {
		if got, err := ParseCount(s); err != nil || got != want {
			t.Errorf("ParseCount(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "1.5", "-3", "1Q", "1e19"} {
		if _, err := ParseCount(s); err == nil {
			t.Errorf("ParseCount(%q) accepted", s)
		}
	}
	for s, want := range map[string]float64{"1%": 0.01, "0.01": 0.01, "1e-3": 0.001, "0.1%": 0.001} {
		if got, err := ParseRate(s); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"0", "1", "100%", "x", "-1%"} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
}

func ExampleCount() {
	fs := flag.NewFlagSet("crawler", flag.ContinueOnError)
	n := Count(fs, "n", 1000, "URLs to size for")
	p := Rate(fs, "p", 0.01, "false-positive rate")
	fs.Parse([]string{"-n", "1M", "-p", "0.1%"})
	fmt.Println(*n, *p)
	// Output: 1000000 0.001
}
