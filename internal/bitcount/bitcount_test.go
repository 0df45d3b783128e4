package bitcount_test

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/bloomkit/bloomkit/internal/bitcount"
)

func TestOnes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 40 {
		p := make([]byte, n)
		var want uint64
		for i := range p {
			p[i] = byte(r.Uint32())
			want += uint64(bits.OnesCount8(p[i]))
		}
		if got := bitcount.Ones(p); got != want {
			t.Errorf("Ones of %d bytes = %d, want %d", n, got, want)
		}
	}
}

// The estimates invert the expected fill: n keys set about
// m(1 − (1 − 1/m)^(kn)) bits of a classic filter.
func TestClassicInvertsExpectedFill(t *testing.T) {
	const m, k = 100_000, 7
	for _, n := range []uint64{0, 1, 100, 10_000, 30_000} {
		set := m * (1 - math.Pow(1-1.0/m, float64(k*n)))
		if got := bitcount.Classic(uint64(math.Round(set)), m, k); absDiff(got, n) > 1+n/1000 {
			t.Errorf("Classic(%.0f set of %d, k=%d) = %d, want about %d", set, m, k, got, n)
		}
	}
	if got := bitcount.Classic(m, m, k); got != math.MaxUint64 {
		t.Errorf("Classic of a full filter = %d, want MaxUint64", got)
	}
}

// Keys added to a real blocked layout (k random bits of one random block)
// are counted back within 1%.
func TestBlockedCountsSimulatedKeys(t *testing.T) {
	const blocks, k, n = 1024, 7, 20_000
	r := rand.New(rand.NewPCG(3, 4))
	a := make([]byte, blocks*64)
	for range n {
		b := r.IntN(blocks)
		for range k {
			j := r.IntN(bitcount.BlockBits)
			a[b*64+j/8] |= 1 << (j % 8)
		}
	}
	got := bitcount.Blocked(bitcount.Ones(a), blocks*bitcount.BlockBits, k)
	if absDiff(got, n) > n/100 {
		t.Errorf("Blocked estimate %d for %d keys", got, n)
	}
	if got := bitcount.Blocked(blocks*bitcount.BlockBits, blocks*bitcount.BlockBits, k); got != math.MaxUint64 {
		t.Errorf("Blocked of a full filter = %d, want MaxUint64", got)
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

func Example() {
	bits := []byte{0xff, 0x01, 0, 0}
	fmt.Println(bitcount.Ones(bits), "bits set;", bitcount.Classic(bitcount.Ones(bits), 32, 3), "keys, about")
	// Output: 9 bits set; 3 keys, about
}
