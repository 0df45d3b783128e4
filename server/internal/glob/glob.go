// Package glob matches glob patterns (KEYS, SCAN MATCH, CONFIG GET, ACL
// key and channel patterns) with the rules of Redis's
// stringmatchlen: * any run of bytes, ? one byte, [abc] [^abc] [a-z] a
// class (a reversed range counts, \x escapes inside it, an unclosed class
// runs to the end of the pattern), \x the byte x. One of Redis's corner
// cases is kept: an empty string matches only the empty pattern (KEYS *
// and SCAN MATCH * take every key without matching).
//
// The matcher never backtracks further than the most recent star, so one
// match costs at most O(len(pattern) × len(s)) steps, never exponential
// time: a pattern of many stars against a long key is as cheap as any
// other (the recursive matcher Redis fixed as CVE-2022-36021 was not).
// This is correct because a star can absorb whatever an earlier star
// would: if the rest of the pattern after the latest star matches nowhere
// from here, no longer match for an earlier star can help.
package glob

// Match reports whether s matches the glob pattern p.
func Match(p, s string) bool {
	ok, _ := MatchSteps(p, s)
	return ok
}

// MatchSteps is Match that also reports the steps it took (tests
// bound the work by it, not by the clock).
func MatchSteps(p, s string) (match bool, steps int) {
	if len(s) == 0 {
		return len(p) == 0, 0
	}
	pi, si := 0, 0
	starP, starS := -1, 0 // after the latest star, and where its match ends
	for si < len(s) {
		steps++
		if pi < len(p) && p[pi] == '*' {
			for pi < len(p) && p[pi] == '*' {
				pi++
			}
			if pi == len(p) {
				return true, steps
			}
			starP, starS = pi, si
			continue
		}
		if pi < len(p) {
			if ok, next := globToken(p, pi, s[si]); ok {
				pi, si = next, si+1
				continue
			}
		}
		if starP < 0 {
			return false, steps
		}
		// Let the latest star take one byte more.
		starS++
		pi, si = starP, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p), steps
}

// globToken matches the pattern element at p[i] (not a star) against the
// byte c and returns where the next element starts. An element's length
// never depends on c.
func globToken(p string, i int, c byte) (bool, int) {
	switch p[i] {
	case '?':
		return true, i + 1
	case '\\':
		if i+1 < len(p) {
			i++
		}
		return p[i] == c, i + 1
	case '[':
		j := i + 1
		not := j < len(p) && p[j] == '^'
		if not {
			j++
		}
		match := false
		for {
			switch {
			case j+1 < len(p) && p[j] == '\\':
				match = match || p[j+1] == c
				j += 2
				continue
			case j < len(p) && p[j] == ']':
				j++
			case j >= len(p):
				// Unclosed: the class ends with the pattern.
			case j+2 < len(p) && p[j+1] == '-':
				lo, hi := p[j], p[j+2]
				if lo > hi {
					lo, hi = hi, lo
				}
				match = match || (c >= lo && c <= hi)
				j += 3
				continue
			default:
				match = match || p[j] == c
				j++
				continue
			}
			break
		}
		return match != not, j
	default:
		return p[i] == c, i + 1
	}
}
