package main

import (
	"strings"
	"testing"
	"time"
)

// A 10 ms stall with probes due every 2 ms stands for the probes that
// would have waited 8, 6, 4 and 2 ms behind it.
func TestCorrected(t *testing.T) {
	got := corrected([]time.Duration{time.Millisecond, 10 * time.Millisecond}, 2*time.Millisecond)
	want := []time.Duration{time.Millisecond, 10 * time.Millisecond, 8 * time.Millisecond, 6 * time.Millisecond, 4 * time.Millisecond, 2 * time.Millisecond}
	if len(got) != len(want) {
		t.Fatalf("corrected = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("corrected = %v, want %v", got, want)
		}
	}
}

func TestPct(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{1, 100 * time.Millisecond}, {.99, 99 * time.Millisecond}, {.5, 50 * time.Millisecond}, {0, time.Millisecond}} {
		if got := pct(d, c.q); got != c.want {
			t.Errorf("pct(1..100 ms, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := pct(nil, .5); got != 0 {
		t.Errorf("pct(nil) = %v, want 0", got)
	}
}

func TestKBField(t *testing.T) {
	status := "Name:\tbloom\nVmHWM:\t  123456 kB\nVmRSS:\t   65536 kB\n"
	if got, err := kbField(strings.NewReader(status), "VmRSS"); err != nil || got != 65536<<10 {
		t.Errorf("VmRSS = %d, %v; want %d", got, err, 65536<<10)
	}
	if _, err := kbField(strings.NewReader(status), "VmSwap"); err == nil {
		t.Error("a missing field gave no error")
	}
	// "Vm" must not match "VmHWM"/"VmRSS": only the whole name counts.
	if _, err := kbField(strings.NewReader(status), "Vm"); err == nil {
		t.Error("a prefix of a field name matched")
	}
}
