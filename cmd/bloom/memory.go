package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/internal/memlimit"
)

// Filters are allocated whole, up front. One larger than the memory the
// process may use would end in the Go runtime's "fatal error: out of
// memory" and a goroutine dump, or in the kernel's OOM killer; checking
// first turns that into a sentence with sizes that fit.

// memoryLimit returns the bytes this process can still allocate: the lower
// of the cgroup's free room and the system's MemAvailable, and where the
// figure comes from. ok is false when neither can be read (then nothing is
// refused). The server's default maxmemory reads the same files.
func memoryLimit() (avail uint64, source string, ok bool) {
	return memlimit.System{}.Available()
}

// memoryHeadroom is kept free for everything but the filter: read buffers,
// the runtime, the rest of the system.
const memoryHeadroom = 64 << 20

// checkMemory refuses a filter of need bytes that does not fit in the
// memory available. fit(budget) says what would fit in budget bytes (the
// -n and -p to use instead); it is called only when refusing.
func checkMemory(need uint64, fit func(budget uint64) string) error {
	avail, source, ok := memoryLimit()
	if !ok || need+memoryHeadroom <= avail {
		return nil
	}
	budget := uint64(0)
	if avail > memoryHeadroom {
		budget = avail - memoryHeadroom
	}
	msg := fmt.Sprintf("the filter needs %s of memory but only %s is available (%s)",
		humanBytes(need), humanBytes(avail), source)
	if s := fit(budget); s != "" {
		msg += "; " + s
	}
	return fmt.Errorf("%s", msg)
}

// fitSuggestion says which -n (at rate p) and which -p (for n keys) fit a
// filter into budget bytes, given the bits per key the type needs at a
// rate and the rate m bits give n keys.
func fitSuggestion(budget, n uint64, p float64, bitsAt func(n uint64, p float64) uint64, rateOf func(m, n uint64) float64) string {
	if budget == 0 {
		return "free some memory first"
	}
	need := bitsAt(n, p)
	nFit := uint64(float64(n) * float64(budget*8) / float64(max(need, 1)))
	nFit = roundDown2(nFit)
	var parts []string
	if nFit >= 1 {
		parts = append(parts, fmt.Sprintf("-n %s fits at -p %s", siCount(nFit), formatPlanned(p)))
	}
	if r := rateOf(budget*8, n); r < 0.5 {
		parts = append(parts, fmt.Sprintf("-p %s fits for -n %s", formatRateUp(r), siCount(n)))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", or ")
}

// roundDown2 rounds v down to two significant digits.
func roundDown2(v uint64) uint64 {
	if v < 100 {
		return v
	}
	scale := uint64(1)
	for v/scale >= 100 {
		scale *= 10
	}
	return v / scale * scale
}

// siCount prints a count the way -n accepts it: 1.5M, 20G, 950K, 999.
func siCount(v uint64) string {
	for _, u := range []struct {
		div float64
		suf string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "K"}} {
		if float64(v) >= u.div {
			return strconv.FormatFloat(float64(v)/u.div, 'g', 3, 64) + u.suf
		}
	}
	return strconv.FormatUint(v, 10)
}

// formatRateUp prints a rate as a percentage rounded up to two significant
// digits, so that the suggested -p really fits.
func formatRateUp(p float64) string {
	pc := p * 100
	exp := math.Floor(math.Log10(pc))
	scale := math.Pow(10, exp-1)
	pc = math.Ceil(pc/scale-1e-9) * scale
	return strconv.FormatFloat(pc, 'f', max(0, int(-exp+1)), 64) + "%"
}
