package guava

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// TestGolden: a filter Guava 31.1 wrote (testdata/golden, made by
// testdata/java/Interop.java from the first 1000 keys of interopKey at 1%)
// is read, answers present for its keys, and New builds the same bytes
// from the same keys, so the sizing, hashing and layout stay Guava's even
// where Java is not installed.
func TestGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/golden/java-1000-keys-1pct.bin")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(1000, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		k := interopKey(i)
		if !g.TestString(k) || !g.Test([]byte(k)) {
			t.Fatalf("Guava's filter lost key %d %q", i, k)
		}
		f.AddString(k)
	}
	var got bytes.Buffer
	if _, err := f.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("New(1000, 0.01) with the same keys wrote %d bytes unlike Guava's %d", got.Len(), len(want))
	}
	if g.M() != 9600 || g.K() != 7 || f.Size() != int64(len(want)) {
		t.Errorf("m=%d k=%d size=%d, Guava: 9600 bits, 7 probes, %d bytes", g.M(), g.K(), f.Size(), len(want))
	}
	if c := g.ApproxCount(); c < 950 || c > 1050 {
		t.Errorf("ApproxCount %d for 1000 keys", c)
	}
	if !Sniff(want, int64(len(want))) || Sniff(want, int64(len(want))+1) {
		t.Error("Sniff does not recognize exactly the golden file's size")
	}
}

func TestReadErrors(t *testing.T) {
	f, _ := New(100, 0.01)
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
		{"short header", good[:3], ErrTruncated},
		{"short bits", good[:len(good)-1], ErrTruncated},
		{"strategy 0 (MURMUR128_MITZ_32)", mod(0, 0), ErrStrategy},
		{"no hash functions", mod(1, 0), ErrCorrupt},
		{"zero words", append([]byte{1, 3, 0, 0, 0, 0}, good[6:]...), ErrCorrupt},
		{"negative word count", mod(2, 0x80), ErrCorrupt},
		{"huge word count", mod(2, 0x7f), ErrTruncated},
	}
	for _, c := range cases {
		if _, err := Read(bytes.NewReader(c.in)); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// Through a reader that cannot tell its length, a forged count ends in
	// ErrTruncated after reading what there is.
	if _, err := Read(onlyReader{bytes.NewReader(mod(2, 0x7f))}); !errors.Is(err, ErrTruncated) {
		t.Errorf("forged count on a stream: %v", err)
	}
	g, err := Read(bytes.NewReader(good))
	if err != nil || !g.TestString("x") {
		t.Fatalf("round trip: %v", err)
	}
}

type onlyReader struct{ r *bytes.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestParams(t *testing.T) {
	for _, p := range []float64{0, 1, -1, 2} {
		if _, err := New(10, p); !errors.Is(err, ErrParams) {
			t.Errorf("New(10, %v): %v", p, err)
		}
	}
	for _, k := range []int{0, 256} {
		if _, err := NewWithBits(64, k); !errors.Is(err, ErrParams) {
			t.Errorf("NewWithBits(64, %d): %v", k, err)
		}
	}
	if _, err := NewWithBits(0, 3); !errors.Is(err, ErrParams) {
		t.Errorf("NewWithBits(0, 3): %v", err)
	}
	a, _ := New(100, 0.01)
	b, _ := New(100, 0.01)
	c, _ := New(200, 0.01)
	b.AddString("b")
	if err := a.Union(b); err != nil || !a.TestString("b") {
		t.Errorf("Union: %v", err)
	}
	if err := a.Union(c); !errors.Is(err, ErrParams) {
		t.Errorf("Union of different sizes: %v", err)
	}
}
