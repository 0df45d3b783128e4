package server

import (
	"math"
	"strconv"
	"strings"
)

// parseInt parses a 64-bit integer the way Redis's string2ll does: an optional
// '-', then digits with no leading zeros, nothing else (no '+', no spaces).
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	p := b
	if p[0] == '-' {
		neg = true
		p = p[1:]
		if len(p) == 0 {
			return 0, false
		}
	}
	if p[0] < '1' || p[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// parseFloat parses a double like Redis's strict parser: no surrounding
// spaces, no trailing junk, no NaN, no hex. Out-of-range values become ±Inf
// or 0, as in newer Redis, and are then rejected by the caller's range check.
func parseFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 256 {
		return 0, false
	}
	s := string(b)
	if s[0] == ' ' || s[len(s)-1] == ' ' || strings.ContainsAny(s, "xX_\t\r\n") {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
