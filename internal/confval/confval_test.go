package confval

import (
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"0", 0}, {"100", 100}, {"100b", 100}, {"1k", 1000}, {"1kb", 1024}, {"1KB", 1024},
		{"100mb", 100 << 20}, {"1gb", 1 << 30}, {"4GiB", 4 << 30}, {"4gib", 4 << 30}, {"2g", 2e9},
		{"1.5gb", 3 << 29}, {"1tb", 1 << 40}, {" 512mb ", 512 << 20},
	} {
		got, err := ParseSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "gb", "-1", "-1gb", "1.5", "x", "1zb", "99999999999999999999", "20000000000gb", "nan", "NaNgb"} {
		if v, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, v)
		}
	}
	if !SameSize("2gb", "2147483648") || SameSize("2g", "2gb") {
		t.Error("SameSize")
	}
}

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		unit time.Duration
		want time.Duration
	}{{"300", time.Second, 300 * time.Second}, {"0", time.Second, 0}, {"1m30s", time.Second, 90 * time.Second},
		{"250ms", time.Second, 250 * time.Millisecond}, {"100", time.Millisecond, 100 * time.Millisecond}} {
		got, err := ParseDuration(c.in, c.unit)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "-1", "-5s", "soon", "99999999999999999999"} {
		if _, err := ParseDuration(bad, time.Second); err == nil {
			t.Errorf("ParseDuration(%q): want an error", bad)
		}
	}
}

func TestParseBool(t *testing.T) {
	for in, want := range map[string]bool{"yes": true, "YES": true, "no": false, "true": true, "off": false, "1": true, "0": false} {
		if got, err := ParseBool(in); err != nil || got != want {
			t.Errorf("ParseBool(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseBool("maybe"); err == nil {
		t.Error("ParseBool(maybe): want an error")
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[uint64]string{512: "512 B", 1536: "1.5 KiB", 4 << 30: "4.0 GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
