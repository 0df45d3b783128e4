// Package confval parses the values of bloomkit's settings the way Redis's
// configuration does — sizes such as 4gb or 512mb, durations, yes/no
// booleans — so that a command-line flag, a config-file directive and
// CONFIG SET accept the same words with the same meaning.
package confval

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// sizeUnits are the suffixes ParseSize knows, longest first. As in Redis,
// k, m and g are powers of 1000 and kb, mb and gb powers of 1024; the IEC
// names (KiB, MiB, GiB, TiB) are powers of 1024 too.
var sizeUnits = []struct {
	suffix string
	mul    uint64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"b", 1},
}

// ParseSize reads a size in bytes: a plain number of bytes, or a number
// with a unit — k/m/g/t (powers of 1000, as Redis), kb/mb/gb/tb or
// KiB/MiB/GiB/TiB (powers of 1024) — in any case. A fraction is allowed
// with a unit (1.5gb); the result is rounded down to whole bytes.
func ParseSize(v string) (uint64, error) {
	t := strings.ToLower(strings.TrimSpace(v))
	mul := uint64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSuffix(t, u.suffix), u.mul
			break
		}
	}
	t = strings.TrimSpace(t)
	if t == "" {
		return 0, fmt.Errorf("not a size: %q (want bytes or a number with a unit such as 512mb or 4gb)", v)
	}
	if n, err := strconv.ParseUint(t, 10, 64); err == nil {
		if n != 0 && n > math.MaxUint64/mul {
			return 0, fmt.Errorf("size too large: %q", v)
		}
		return n * mul, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsNaN(f) || mul == 1 {
		return 0, fmt.Errorf("not a size: %q (want bytes or a number with a unit such as 512mb or 4gb)", v)
	}
	if f*float64(mul) >= 1<<63 {
		return 0, fmt.Errorf("size too large: %q", v)
	}
	return uint64(f * float64(mul)), nil
}

// SameSize reports whether two size strings name the same number of bytes
// (both must parse).
func SameSize(a, b string) bool {
	x, err1 := ParseSize(a)
	y, err2 := ParseSize(b)
	return err1 == nil && err2 == nil && x == y
}

// FormatSize prints a byte count in IEC units for people: 512 B, 1.5 KiB,
// 3.8 GiB.
func FormatSize(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[i]
}

// ParseDuration reads a duration: a plain integer counts unit (Redis's
// timeout is in seconds, its latency threshold in milliseconds), anything
// else is a Go duration such as 300s, 1m30s or 250ms. Negative durations
// are refused.
func ParseDuration(v string, unit time.Duration) (time.Duration, error) {
	t := strings.TrimSpace(v)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("negative duration: %q", v)
		}
		if n > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("duration too long: %q", v)
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("not a duration: %q (want a number of %s or a value such as 300s)", v, unitName(unit))
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration: %q", v)
	}
	return d, nil
}

func unitName(u time.Duration) string {
	switch u {
	case time.Second:
		return "seconds"
	case time.Millisecond:
		return "milliseconds"
	case time.Microsecond:
		return "microseconds"
	}
	return u.String() + " units"
}

// ErrBool is returned by ParseBool for anything but its words.
var ErrBool = errors.New("want yes or no")

// ParseBool reads yes/no as Redis does, and also true/false, on/off and
// 1/0, in any case.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "true", "on", "1":
		return true, nil
	case "no", "false", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("%w, not %q", ErrBool, v)
}

// FormatBool prints b as Redis does: yes or no.
func FormatBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
