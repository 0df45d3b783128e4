package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// words loads Debian's wamerican list: skipped when it is not installed,
// failed when BLOOMKIT_REQUIRE_DICT=1 (CI, after make deps installs it).
func words(t testing.TB) []string {
	t.Helper()
	ws, err := readWords(DefaultDict)
	if err != nil {
		if os.Getenv("BLOOMKIT_REQUIRE_DICT") == "1" {
			t.Fatalf("%v, and BLOOMKIT_REQUIRE_DICT=1 requires it (run 'sudo make deps')", err)
		}
		t.Skipf("%v; skipping (set BLOOMKIT_REQUIRE_DICT=1 to fail instead)", err)
	}
	return ws
}

// exactKnown is Known computed on an exact set: the truth.
func exactKnown(set map[string]struct{}, w string) bool {
	if _, ok := set[w]; ok {
		return true
	}
	r, size := utf8.DecodeRuneInString(w)
	if unicode.IsUpper(r) {
		if _, ok := set[string(unicode.ToLower(r))+w[size:]]; ok {
			return true
		}
		if _, ok := set[strings.ToLower(w)]; ok {
			return true
		}
	}
	return false
}

// misspell makes one typing error in w: a letter dropped, doubled, swapped
// with the next, or replaced.
func misspell(rng *rand.Rand, w string) string {
	b := []byte(w)
	i := rng.IntN(len(b))
	letter := byte('a' + rng.IntN(26))
	switch rng.IntN(4) {
	case 0:
		return string(append(b[:i:i], b[i+1:]...))
	case 1:
		return string(b[:i+1]) + string(b[i:])
	case 2:
		if i+1 < len(b) {
			b[i], b[i+1] = b[i+1], b[i]
		}
		return string(b)
	default:
		b[i] = letter
		return string(b)
	}
}

// TestFalseAcceptance measures what the README reports: every listed word
// is accepted, and misspellings are accepted at about the filter's rate.
func TestFalseAcceptance(t *testing.T) {
	ws := words(t)
	set := make(map[string]struct{}, len(ws))
	for _, w := range ws {
		set[w] = struct{}{}
	}
	for _, p := range []float64{0.01, 0.001} {
		d, err := NewDictionary(ws, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range ws {
			if !d.Known(w) {
				t.Fatalf("p=%g: the listed word %q is rejected", p, w)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		tried, accepted := 0, 0
		for round := range 3 {
			_ = round
			for _, w := range ws {
				if len(w) < 3 || !isASCIILower(w) {
					continue
				}
				m := misspell(rng, w)
				if exactKnown(set, m) {
					continue // a real word: not a misspelling
				}
				tried++
				if d.Known(m) {
					accepted++
				}
			}
		}
		rate := float64(accepted) / float64(tried)
		// The expected count is tried·p at most; allow 5 standard deviations.
		limit := p + 5*math.Sqrt(p*(1-p)/float64(tried))
		t.Logf("p=%g: %d words in %d KiB; %d of %d misspellings accepted (%.3f%%)",
			p, d.Words(), d.Bytes()>>10, accepted, tried, 100*rate)
		if rate > limit {
			t.Errorf("p=%g: %.4f%% of misspellings accepted, above %.4f%%", p, 100*rate, 100*limit)
		}
	}
}

func isASCIILower(w string) bool {
	for i := range len(w) {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// TestMemoryAgainstMap measures the heap a map[string]struct{} of the same
// words takes (keys included), against the filter's bits.
func TestMemoryAgainstMap(t *testing.T) {
	ws := words(t)
	// Copies of the words, so that the map owns its strings as a loader
	// reading the list would.
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	set := make(map[string]struct{})
	for _, w := range ws {
		set[strings.Clone(w)] = struct{}{}
	}
	mapBytes := heap() - before
	before = heap()
	d, err := NewDictionary(ws, 0.001)
	if err != nil {
		t.Fatal(err)
	}
	filterBytes := heap() - before
	runtime.KeepAlive(ws) // the list itself is not counted on either side
	runtime.KeepAlive(d)
	runtime.KeepAlive(set)
	t.Logf("%d words: map[string]struct{} %d KiB, filter at 0.1%% %d KiB (%.1fx smaller)",
		len(ws), mapBytes>>10, filterBytes>>10, float64(mapBytes)/float64(filterBytes))
	if filterBytes*4 > mapBytes {
		t.Errorf("the filter (%d B) is not a quarter of the map (%d B)", filterBytes, mapBytes)
	}
}

func TestSplitWords(t *testing.T) {
	got := splitWords("Don't stop—the dog's 3 bones, ’tis rock’n’roll!")
	want := []string{"Don't", "stop", "the", "dog's", "bones", "tis", "rock'n'roll"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("splitWords = %q, want %q", got, want)
	}
}

func TestRun(t *testing.T) {
	words(t)
	var out, errb bytes.Buffer
	code := run(nil, strings.NewReader("Teh quick brown fox\njumpd over the lazy dog's back.\n"), &out, &errb)
	if code != 1 || out.String() != "1: Teh\n2: jumpd\n" {
		t.Errorf("run: %d %q %q", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(nil, strings.NewReader("The quick brown fox.\n"), &out, &errb); code != 0 || out.Len() != 0 {
		t.Errorf("a correct text: %d %q", code, out.String())
	}
	if code := run([]string{"-dict", "/no/such/list"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("a missing list: exit %d", code)
	}
}

// BenchmarkKnown compares a lookup in the filter with one in a map.
func BenchmarkKnown(b *testing.B) {
	ws := words(b)
	d, _ := NewDictionary(ws, 0.001)
	set := make(map[string]struct{}, len(ws))
	for _, w := range ws {
		set[w] = struct{}{}
	}
	b.Run("filter", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			d.filter.TestString(ws[i%len(ws)])
		}
	})
	b.Run("map", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_ = set[ws[i%len(ws)]]
		}
	})
}
