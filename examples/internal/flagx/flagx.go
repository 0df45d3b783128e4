// Package flagx gives the examples' flags the spellings the bloom command
// line accepts: counts as 1000000, 1_000_000, 1e6 or 1M (K, M, G, T are
// powers of 1000) and rates as 0.01 or 1%.
package flagx

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Count defines a count flag on fs and returns where its value is kept.
func Count(fs *flag.FlagSet, name string, value uint64, usage string) *uint64 {
	c := &count{v: value}
	fs.Var(c, name, usage)
	return &c.v
}

// Rate defines a rate flag, strictly between 0 and 1, on fs.
func Rate(fs *flag.FlagSet, name string, value float64, usage string) *float64 {
	r := &rate{v: value}
	fs.Var(r, name, usage)
	return &r.v
}

type count struct{ v uint64 }

func (c *count) String() string {
	if c == nil {
		return "0"
	}
	return strconv.FormatUint(c.v, 10)
}

func (c *count) Set(s string) error {
	v, err := ParseCount(s)
	c.v = v
	return err
}

type rate struct{ v float64 }

func (r *rate) String() string {
	if r == nil {
		return "0"
	}
	return strconv.FormatFloat(r.v*100, 'g', -1, 64) + "%"
}

func (r *rate) Set(s string) error {
	v, err := ParseRate(s)
	r.v = v
	return err
}

var suffix = map[string]float64{"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}

// ParseCount parses a whole number from 0 to 1e18: 1000000, 1_000_000,
// 1,000,000, 1e6, 1M, 1.5K.
func ParseCount(s string) (uint64, error) {
	t := strings.NewReplacer("_", "", ",", "").Replace(strings.TrimSpace(s))
	mult := 1.0
	if n := len(t); n > 0 {
		if m, ok := suffix[strings.ToUpper(t[n-1:])]; ok && t[n-1] != 'e' && t[n-1] != 'E' {
			mult, t = m, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	v *= mult
	if err != nil || math.IsNaN(v) || v < 0 || v > 1e18 || v != math.Trunc(v) {
		return 0, fmt.Errorf("not a count: %q (write 1000000, 1e6 or 1M)", s)
	}
	return uint64(v), nil
}

// ParseRate parses a rate strictly between 0 and 1: 0.01, 1%, 1e-3.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || !(v > 0 && v < 1) {
		return 0, fmt.Errorf("not a rate between 0 and 1: %q (write 0.01 or 1%%)", s)
	}
	return v, nil
}
