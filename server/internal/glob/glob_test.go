package glob

import (
	"math/rand"
	"strings"
	"testing"
)

// refGlob is the reference the fast matcher is checked against: a direct,
// exponential-time reading of Redis's stringmatchlen rules (recursion at
// every star, no shortcut), usable on small inputs only.
func refGlob(p, s string) bool {
	pi, si := 0, 0
	for pi < len(p) && si < len(s) {
		switch p[pi] {
		case '*':
			for pi+1 < len(p) && p[pi+1] == '*' {
				pi++
			}
			if pi+1 == len(p) {
				return true
			}
			for k := si; k < len(s); k++ {
				if refGlob(p[pi+1:], s[k:]) {
					return true
				}
			}
			return false
		case '?':
			si++
		case '[':
			pi++
			not := pi < len(p) && p[pi] == '^'
			if not {
				pi++
			}
			match := false
			for {
				if pi < len(p) && p[pi] == '\\' && len(p)-pi >= 2 {
					pi++
					if p[pi] == s[si] {
						match = true
					}
				} else if pi < len(p) && p[pi] == ']' {
					break
				} else if pi >= len(p) {
					pi-- // unclosed: stay on the last byte, consumed below
					break
				} else if len(p)-pi >= 3 && p[pi+1] == '-' {
					lo, hi := p[pi], p[pi+2]
					if lo > hi {
						lo, hi = hi, lo
					}
					pi += 2
					if s[si] >= lo && s[si] <= hi {
						match = true
					}
				} else if p[pi] == s[si] {
					match = true
				}
				pi++
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			si++
		case '\\':
			if len(p)-pi >= 2 {
				pi++
			}
			fallthrough
		default:
			if p[pi] != s[si] {
				return false
			}
			si++
		}
		pi++
		if si == len(s) {
			for pi < len(p) && p[pi] == '*' {
				pi++
			}
			break
		}
	}
	return pi == len(p) && si == len(s)
}

func TestGlobCases(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "abc", true}, {"*", "", false}, {"", "", true}, {"a*", "a", true},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false},
		{"h[ae]llo", "hallo", true}, {"h[^e]llo", "hello", false}, {"h[^e]llo", "hallo", true},
		{"h[a-b]llo", "hbllo", true}, {"h[b-a]llo", "hallo", true}, {"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true}, {`h\*llo`, "hello", false}, {`[\]]`, "]", true},
		{"[a", "a", true}, {"[^", "x", true}, {"[", "[", false}, {`a\`, `a\`, true},
		{"[a-]", "_", true}, {"*b*c", "abxbc", true}, {"a*b*c", "abcbx", false},
		{"user:*:name", "user:42:name", true}, {"user:*:name", "user:42:names", false},
	}
	for _, c := range cases {
		if got := Match(c.p, c.s); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
		if got := refGlob(c.p, c.s); got != c.want {
			t.Errorf("refGlob(%q, %q) = %v, want %v (the reference is wrong)", c.p, c.s, got, c.want)
		}
	}
}

// TestGlobRandom compares the matcher with the reference on many small
// random patterns and strings over a tiny alphabet (so that matches and
// near-matches are common).
func TestGlobRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pAlpha := []byte(`ab*?[]^-\`)
	sAlpha := []byte(`ab*[]-\`)
	gen := func(alpha []byte, max int) string {
		b := make([]byte, rng.Intn(max+1))
		for i := range b {
			b[i] = alpha[rng.Intn(len(alpha))]
		}
		return string(b)
	}
	for i := 0; i < 200000; i++ {
		p, s := gen(pAlpha, 8), gen(sAlpha, 8)
		if got, want := Match(p, s), refGlob(p, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, reference %v", p, s, got, want)
		}
	}
}

// TestGlobWorkBound: the work of one match is bounded by the product of
// the lengths, whatever the pattern — stars included.
func TestGlobWorkBound(t *testing.T) {
	key := strings.Repeat("a", 60)
	for stars := 1; stars <= 30; stars++ {
		p := strings.Repeat("a*", stars) + "b" // never matches: worst case
		ok, steps := MatchSteps(p, key)
		if ok {
			t.Fatalf("%q matched %q", p, key)
		}
		if bound := (len(p) + 1) * (len(key) + 1); steps > bound {
			t.Errorf("%d stars: %d steps, more than %d", stars, steps, bound)
		}
	}
}

// FuzzGlob checks the matcher against the reference and the work bound.
func FuzzGlob(f *testing.F) {
	f.Add("a*b?c[^d-f]\\*", "axxbycg*")
	f.Add("[a", "a")
	f.Fuzz(func(t *testing.T, p, s string) {
		ok, steps := MatchSteps(p, s)
		if bound := (len(p) + 1) * (len(s) + 1); steps > bound {
			t.Fatalf("%q vs %q: %d steps > %d", p, s, steps, bound)
		}
		if len(p) <= 12 && len(s) <= 12 && strings.Count(p, "*") <= 4 {
			if want := refGlob(p, s); ok != want {
				t.Fatalf("Match(%q, %q) = %v, reference %v", p, s, ok, want)
			}
		}
	})
}
