// Package interop checks bloomkit's readers and writers of other libraries'
// formats against the real libraries, which only bench/'s module may
// depend on (the library's go.mod must not carry them). make test runs it.
package interop

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"testing"

	bitsbloom "github.com/bits-and-blooms/bloom/v3"

	"github.com/bloomkit/bloomkit/bitsandblooms"
)

var update = flag.Bool("update", false, "rewrite bitsandblooms/testdata/golden from the real library")

func key(i int) []byte {
	switch i % 4 {
	case 0:
		return fmt.Appendf(nil, "k%d", i)
	case 1:
		return fmt.Appendf(nil, "ключ-%d", i)
	case 2:
		return fmt.Appendf(nil, "https://example.com/%0*d", i%300, i) // keys up to 300 bytes
	}
	return []byte{byte(i), byte(i >> 8), byte(i >> 16), 0, 0xff}
}

// TestBitsAndBlooms: for 100k keys, the real library and our package build
// byte-identical files; each reads the other's file; and the four filters
// answer alike for the 100k present and 100k absent keys.
func TestBitsAndBlooms(t *testing.T) {
	const n, p = 100_000, 0.01
	theirs := bitsbloom.NewWithEstimates(n, p)
	ours, err := bitsandblooms.NewWithEstimates(n, p)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(theirs.Cap()) != ours.M() || uint64(theirs.K()) != ours.K() {
		t.Fatalf("sizing: theirs m=%d k=%d, ours m=%d k=%d", theirs.Cap(), theirs.K(), ours.M(), ours.K())
	}
	for i := range n {
		theirs.Add(key(i))
		if i%2 == 0 {
			ours.Add(key(i))
		} else {
			ours.AddString(string(key(i)))
		}
	}
	var tb, ob bytes.Buffer
	if _, err := theirs.WriteTo(&tb); err != nil {
		t.Fatal(err)
	}
	if _, err := ours.WriteTo(&ob); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tb.Bytes(), ob.Bytes()) {
		t.Errorf("files differ: theirs %d bytes, ours %d", tb.Len(), ob.Len())
	}
	oursRead, err := bitsandblooms.Read(bytes.NewReader(tb.Bytes()))
	if err != nil {
		t.Fatalf("reading their file: %v", err)
	}
	theirsRead := new(bitsbloom.BloomFilter)
	if _, err := theirsRead.ReadFrom(bytes.NewReader(ob.Bytes())); err != nil {
		t.Fatalf("their ReadFrom of our file: %v", err)
	}
	var diff, fp int
	for i := range 2 * n {
		k := key(i)
		a, b, c, d := theirs.Test(k), ours.Test(k), oursRead.Test(k), theirsRead.Test(k)
		if a != b || a != c || a != d {
			if diff++; diff <= 5 {
				t.Errorf("key %d %q: theirs %v, ours %v, ours on their file %v, theirs on our file %v", i, k, a, b, c, d)
			}
		}
		if i < n && !b {
			t.Fatalf("present key %d tests absent", i)
		}
		if i >= n && b {
			fp++
		}
	}
	if diff > 0 {
		t.Errorf("%d keys answered differently", diff)
	}
	if theirs.ApproximatedSize() != uint32(ours.ApproxCount()) {
		t.Errorf("ApproximatedSize %d, our ApproxCount %d", theirs.ApproximatedSize(), ours.ApproxCount())
	}
	t.Logf("%d keys at %v: %d bytes from both; %d false positives among %d absent keys", n, p, ob.Len(), fp, n)
}

// TestBitsAndBloomsGolden keeps bitsandblooms/testdata/golden equal to what
// the real library writes for the first 1000 keys at 1% (go test -update
// rewrites it); the bitsandblooms package's own test checks it is what our
// writer makes, where this module is not built.
func TestBitsAndBloomsGolden(t *testing.T) {
	f := bitsbloom.NewWithEstimates(1000, 0.01)
	for i := range 1000 {
		f.Add(key(i))
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	const path = "../../bitsandblooms/testdata/golden/v3-1000-keys-1pct.bin"
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the real library writes %d bytes unlike the golden file's %d", b.Len(), len(want))
	}
}
