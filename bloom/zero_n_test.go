package bloom

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestZeroItems: n = 0 means the smallest filter for every constructor, as
// New(0, p) always did (NewScalable(0, p) used to be an error), and the
// filter works: a key added tests present.
func TestZeroItems(t *testing.T) {
	f, err := New(0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBlocked(0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCounting(0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScalable(0, 0.01)
	if err != nil {
		t.Fatalf("NewScalable(0, p): %v", err)
	}
	w, err := NewWindow(time.Hour, 0, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]Interface{"Filter": f, "Blocked": b, "Counting": c, "Scalable": s, "Window": w} {
		x.AddString("k")
		if !x.TestString("k") {
			t.Errorf("%s for 0 items lost a key", name)
		}
	}
	if s.Config().Capacity != 1 {
		t.Errorf("NewScalable(0, p) has capacity %d, want 1", s.Config().Capacity)
	}
}

// TestTooManyItemsSaysWhy: a size beyond MaxBits is refused with a message
// that names the items and the rate, not "m = 0 bits" or "filter is full".
func TestTooManyItemsSaysWhy(t *testing.T) {
	_, err := NewWindow(time.Hour, math.MaxUint64, 0.01)
	if !errors.Is(err, ErrInvalidParams) || strings.Contains(err.Error(), "m = 0") || !strings.Contains(err.Error(), "18446744073709551615 items") {
		t.Errorf("NewWindow(huge): %v", err)
	}
	_, err = NewScalable(math.MaxUint64, 0.01)
	if !errors.Is(err, ErrInvalidParams) || strings.Contains(err.Error(), "full") {
		t.Errorf("NewScalable(huge): %v", err)
	}
}

// TestRateMessage: the rate error reads like the documentation, (0, 1),
// and names MinRate only for a positive rate below it.
func TestRateMessage(t *testing.T) {
	for _, p := range []float64{0, 1, -0.5, math.NaN(), 1e-320} {
		_, err := New(100, p)
		if !errors.Is(err, ErrInvalidParams) {
			t.Fatalf("p = %v: %v", p, err)
		}
		msg := err.Error()
		if p == 1e-320 {
			if !strings.Contains(msg, "MinRate") {
				t.Errorf("p = %v: %q", p, msg)
			}
		} else if !strings.Contains(msg, "not in (0, 1)") || strings.Contains(msg, "2.2250738585072014e-308") {
			t.Errorf("p = %v: %q", p, msg)
		}
	}
}
