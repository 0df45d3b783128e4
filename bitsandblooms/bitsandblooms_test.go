package bitsandblooms

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
)

// key is bench/interop's key function, which wrote the golden file with
// the real library.
func key(i int) []byte {
	switch i % 4 {
	case 0:
		return fmt.Appendf(nil, "k%d", i)
	case 1:
		return fmt.Appendf(nil, "ключ-%d", i)
	case 2:
		return fmt.Appendf(nil, "https://example.com/%0*d", i%300, i)
	}
	return []byte{byte(i), byte(i >> 8), byte(i >> 16), 0, 0xff}
}

// TestGolden: bits-and-blooms/bloom/v3 wrote testdata/golden (see
// bench/interop, which checks it against the real library); we read it,
// find every key, and write the same bytes from the same keys.
func TestGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/golden/v3-1000-keys-1pct.bin")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewWithEstimates(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if !g.Test(key(i)) {
			t.Fatalf("key %d lost", i)
		}
		f.Add(key(i))
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) || f.Size() != int64(len(want)) {
		t.Errorf("wrote %d bytes unlike the real library's %d", b.Len(), len(want))
	}
	if g.M() != 9586 || g.K() != 7 {
		t.Errorf("m=%d k=%d, the library's EstimateParameters(1000, 0.01) is 9586, 7", g.M(), g.K())
	}
	if !Sniff(want, int64(len(want))) || Sniff(want, int64(len(want))-8) {
		t.Error("Sniff does not recognize exactly the golden file's size")
	}
	if c := g.ApproxCount(); c < 950 || c > 1050 {
		t.Errorf("ApproxCount %d for 1000 keys", c)
	}
}

func TestReadErrors(t *testing.T) {
	f, _ := New(1000, 3)
	f.AddString("x")
	var b bytes.Buffer
	f.WriteTo(&b)
	good := b.Bytes()
	mod := func(i int, v byte) []byte { c := bytes.Clone(good); c[i] = v; return c }
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"short header", good[:20], ErrTruncated},
		{"short words", good[:len(good)-3], ErrTruncated},
		{"m = 0", append(make([]byte, 8), good[8:]...), ErrCorrupt},
		{"k = 0", append(append(bytes.Clone(good[:8]), make([]byte, 8)...), good[16:]...), ErrCorrupt},
		{"k huge", mod(8, 1), ErrCorrupt},
		{"length < m", mod(22, 0), ErrCorrupt},
		{"length huge", mod(19, 1), ErrTruncated},
		{"length beyond MaxBits", mod(16, 1), ErrCorrupt},
	}
	for _, c := range cases {
		if _, err := Read(bytes.NewReader(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	g, err := Read(bytes.NewReader(good))
	if err != nil || !g.TestString("x") || g.TestString("y") && g.TestString("z") && g.TestString("w") {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := New(MaxBits+1, 3); !errors.Is(err, ErrParams) {
		t.Errorf("New beyond MaxBits: %v", err)
	}
	if _, err := NewWithEstimates(0, 0.01); !errors.Is(err, ErrParams) {
		t.Errorf("NewWithEstimates(0, 0.01): %v", err)
	}
}

// TestLongKeys: keys past the stack buffer of baseHashes hash as short ones
// do (the second pair is the hash of the key and a 1 byte).
func TestLongKeys(t *testing.T) {
	f, _ := New(1<<16, 5)
	for n := 120; n < 140; n++ {
		k := bytes.Repeat([]byte{'a'}, n)
		f.Add(k)
		if !f.Test(k) {
			t.Fatalf("key of %d bytes lost", n)
		}
	}
}
