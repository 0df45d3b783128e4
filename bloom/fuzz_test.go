package bloom

import (
	"bytes"
	"errors"
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

func addSeeds(f *testing.F) {
	small, _ := NewWithParams(200, 3)
	small.AddString("seed")
	blk, _ := NewBlocked(50, 0.1)
	blk.AddString("seed")
	for _, enc := range []func() ([]byte, error){small.MarshalBinary, blk.MarshalBinary} {
		b, err := enc()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:headerSize])
		f.Add(resign(append([]byte(nil), b...)))
	}
	f.Add(forgedHuge()[:headerSize+64])
	f.Add([]byte(Magic))
}

// FuzzFilterDecode: no input may panic the classic decoder or make it
// allocate without bound; what decodes re-encodes to the same bytes.
func FuzzFilterDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g Filter
		if err := g.UnmarshalBinary(data); err != nil {
			checkDecodeError(t, err)
			return
		}
		g.TestString("probe")
		g.ApproxCount()
		g.EstimatedFPR()
		again, err := g.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decoded filter re-encodes differently")
		}
	})
}

// FuzzBlockedDecode is FuzzFilterDecode for the blocked layout.
func FuzzBlockedDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var g Blocked
		if err := g.UnmarshalBinary(data); err != nil {
			checkDecodeError(t, err)
			return
		}
		g.TestString("probe")
		g.ApproxCount()
		g.EstimatedFPR()
		again, err := g.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatal("decoded filter re-encodes differently")
		}
	})
}
