package resp

import (
	"math"
	"testing"
)

// TestDoubleSpecials: infinities and NaN are written as Redis writes them
// (inf, -inf, nan), in RESP2 bulk strings and RESP3 doubles; others in
// their shortest form.
func TestDoubleSpecials(t *testing.T) {
	for _, c := range []struct {
		v          float64
		resp2, rs3 string
	}{
		{math.Inf(1), "$3\r\ninf\r\n", ",inf\r\n"},
		{math.Inf(-1), "$4\r\n-inf\r\n", ",-inf\r\n"},
		{math.NaN(), "$3\r\nnan\r\n", ",nan\r\n"},
		{2.5, "$3\r\n2.5\r\n", ",2.5\r\n"},
	} {
		var w Writer
		w.Reset(false)
		w.Double(c.v)
		if got := string(w.Bytes()); got != c.resp2 {
			t.Errorf("RESP2 %v: %q, want %q", c.v, got, c.resp2)
		}
		w.Reset(true)
		w.Double(c.v)
		if got := string(w.Bytes()); got != c.rs3 {
			t.Errorf("RESP3 %v: %q, want %q", c.v, got, c.rs3)
		}
	}
}
