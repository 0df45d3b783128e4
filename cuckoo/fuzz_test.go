package cuckoo

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
)

// decodeErrors are the errors a decoder may return on bad input.
var decodeErrors = []error{ErrBadMagic, ErrVersion, ErrType, ErrHash, ErrCorrupt, ErrChecksum, ErrTruncated, ErrTooLarge}

func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	for _, e := range decodeErrors {
		if errors.Is(err, e) {
			return
		}
	}
	t.Fatalf("decode error %v is none of the documented ones", err)
}

// FuzzDecode: no input may panic the decoder or make it allocate without
// bound; what decodes answers queries, accepts insertions and deletions,
// and re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	s := sample(f)
	f.Add(s)
	f.Add(s[:hdr])
	f.Add(s[:offSlots])
	f.Add(resign(append([]byte(nil), s...)))
	f.Add(forgedHuge()[:hdr+64])
	f.Add([]byte("bloomkit"))
	wide, _ := NewWith(Config{Buckets: 5, BucketSize: 9, FingerprintBits: 11})
	_ = wide.AddString("seed")
	b, _ := wide.marshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g Filter
		if err := g.unmarshalBinary(data); err != nil {
			checkDecodeError(t, err)
			return
		}
		again, err := g.marshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decoded filter re-encodes differently")
		}
		g.TestString("probe")
		_ = g.Stats()
		for i := range 20 {
			k := "fuzz" + strconv.Itoa(i)
			if err := g.AddString(k); err != nil {
				if !errors.Is(err, ErrFull) {
					t.Fatal(err)
				}
				continue
			}
			if !g.TestString(k) || !g.DeleteString(k) {
				t.Fatal("a key added to a decoded filter is not found")
			}
		}
	})
}

// FuzzOperations drives a small filter with a sequence of operations read
// from the input and checks it against a reference multiset: no key added
// and not deleted may test absent or count too few copies.
func FuzzOperations(f *testing.F) {
	f.Add([]byte{0x12, 0x34, 0, 1, 2, 3, 4, 5, 0x81, 0x82, 0x83, 6, 7, 8, 0x86})
	f.Add([]byte{0xff, 0xff, 1, 1, 1, 1, 1, 1, 1, 1, 0x81, 0x81, 0x81, 1})
	f.Add(bytes.Repeat([]byte{3, 9, 27, 0x83}, 40))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 2 {
			return
		}
		c := Config{
			Buckets:         uint64(1 + ops[0]&7),
			BucketSize:      uint32(1 + ops[0]>>3&3),
			FingerprintBits: uint32(4 + ops[1]&7),
			MaxKicks:        uint32(1 + ops[1]>>3&15),
			Expansion:       uint32(1 + ops[1]>>7),
		}
		g, err := NewWith(c)
		if err != nil {
			t.Fatal(err)
		}
		ref := map[string]int{}
		for _, op := range ops[2:] {
			k := strconv.Itoa(int(op & 0x3f))
			if op&0x80 == 0 {
				if err := g.AddString(k); err != nil {
					copies := errors.Is(err, ErrTooManyCopies) && g.CountString(k) >= 2*uint64(c.BucketSize)
					if !errors.Is(err, ErrFull) && !copies {
						t.Fatal(err)
					}
					continue
				}
				ref[k]++
			} else if ref[k] > 0 {
				if !g.DeleteString(k) {
					t.Fatalf("delete of present %q failed", k)
				}
				ref[k]--
			}
			for k, n := range ref {
				if n > 0 && g.CountString(k) < uint64(n) {
					t.Fatalf("%+v: %q added %d times counts %d", c, k, n, g.CountString(k))
				}
			}
		}
	})
}
