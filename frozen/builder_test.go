package frozen

import (
	"strconv"
	"testing"
)

// A Builder keeps its keys across Build: adding more and building again
// gives a filter of all of them (it used to forget the first ones: false
// negatives).
func TestBuilderReusedAfterBuild(t *testing.T) {
	b, err := NewBuilder(8, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		b.AddString("first" + strconv.Itoa(i))
	}
	if _, err := b.Build(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		b.AddString("second" + strconv.Itoa(i))
	}
	f, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"first", "second"} {
		for i := 0; i < 1000; i++ {
			if !f.TestString(p + strconv.Itoa(i)) {
				t.Fatalf("the second Build forgot %s%d", p, i)
			}
		}
	}
}

// The zero Builder builds a working filter: 8-bit fingerprints, its
// false-positive rate 2^-8 (it reported 0 bits and a rate of 1).
func TestZeroBuilder(t *testing.T) {
	var b Builder
	for i := 0; i < 1000; i++ {
		b.AddString(strconv.Itoa(i))
	}
	f, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if f.Bits() != 8 || f.EstimatedFPR() != 1.0/256 {
		t.Fatalf("zero Builder: Bits %d, EstimatedFPR %g", f.Bits(), f.EstimatedFPR())
	}
	for i := 0; i < 1000; i++ {
		if !f.TestString(strconv.Itoa(i)) {
			t.Fatalf("false negative for %d", i)
		}
	}
	fp := 0
	for i := 0; i < 100000; i++ {
		if f.TestString("absent" + strconv.Itoa(i)) {
			fp++
		}
	}
	// 2^-8 of 100,000 is 391; 5 standard deviations either side.
	if fp < 290 || fp > 490 {
		t.Fatalf("%d false positives in 100,000, want about 391", fp)
	}
}
