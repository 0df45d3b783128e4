package redisbloom

import (
	"math"
	"math/big"
	"sync"
	"sync/atomic"
)

// logOf is the natural logarithm rounded to the nearest float64, which is
// what RedisBloom gets from the C library's log (glibc's is correctly
// rounded). Go's math.Log is not always: for 0.01 it is one unit in the
// last place away, and a link's bits per entry (a double in its header,
// its SCANDUMP stream and its RDB value) would then differ from
// RedisBloom's. math.Log's answer is corrected by comparing x with the
// exponential, computed to 256 bits, of the midpoints between
// neighbouring doubles. Results are cached: filters use few rates.
func logOf(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 1) || x == 1 {
		return math.Log(x)
	}
	bits := math.Float64bits(x)
	if v, ok := logCache.Load(bits); ok {
		return v.(float64)
	}
	y := math.Log(x)
	bx := new(big.Float).SetPrec(logPrec).SetFloat64(x)
	for range 4 {
		up := math.Nextafter(y, math.Inf(1))
		if bx.Cmp(expBig(midpoint(y, up))) > 0 {
			y = up
			continue
		}
		down := math.Nextafter(y, math.Inf(-1))
		if bx.Cmp(expBig(midpoint(down, y))) < 0 {
			y = down
			continue
		}
		break
	}
	if logCacheLen.Load() < logCacheMax {
		if _, loaded := logCache.LoadOrStore(bits, y); !loaded {
			logCacheLen.Add(1)
		}
	}
	return y
}

const (
	logPrec     = 256
	logCacheMax = 4096
)

var (
	logCache    sync.Map // float64 bits → float64
	logCacheLen atomic.Int64
)

// midpoint is (a+b)/2 exactly.
func midpoint(a, b float64) *big.Float {
	m := new(big.Float).SetPrec(logPrec).SetFloat64(a)
	m.Add(m, new(big.Float).SetPrec(logPrec).SetFloat64(b))
	return m.Quo(m, big.NewFloat(2))
}

// expBig is e^m to about logPrec bits (|m| below a few thousand): m is
// halved until it is below 2^-8, its series summed, and the result
// squared back.
func expBig(m *big.Float) *big.Float {
	r := new(big.Float).SetPrec(logPrec).Set(m)
	n := 0
	for r.MantExp(nil) > -8 {
		r.SetMantExp(r, -1)
		n++
	}
	sum := new(big.Float).SetPrec(logPrec).SetInt64(1)
	term := new(big.Float).SetPrec(logPrec).SetInt64(1)
	eps := new(big.Float).SetPrec(logPrec).SetMantExp(big.NewFloat(1), -logPrec-8)
	for k := int64(1); k < 200; k++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(logPrec).SetInt64(k))
		sum.Add(sum, term)
		if new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for range n {
		sum.Mul(sum, sum)
	}
	return sum
}
