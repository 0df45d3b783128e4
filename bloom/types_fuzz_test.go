package bloom

import (
	"bytes"
	"testing"
)

// addTypeSeeds adds the sample encoding of every type (each fuzz target
// also gets the other types' files, which must fail with ErrType), cut and
// forged variants, to f's corpus. More seeds, found by fuzzing, are in
// testdata/fuzz/<target>/.
func addTypeSeeds(f *testing.F) {
	for _, c := range typeCases {
		b, err := c.sample(f).marshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:headerSize+20])
		f.Add(resign(append([]byte(nil), b...)))
		huge := append([]byte(nil), b...)
		put64(huge, 64, 1<<40) // payload length
		f.Add(resign(huge))
	}
	f.Add([]byte(Magic))
}

// fuzzDecode decodes data into g, checking the error or the re-encoding,
// and reports whether it decoded. Mutations rarely keep the checksums
// right, so data with a full header is also tried with its checksums
// recomputed (resigned), to reach the checks behind them.
func fuzzDecode(t *testing.T, g codec, data []byte) bool {
	if len(data) >= headerSize {
		if ok := decodeOnce(t, g, resign(append([]byte(nil), data...))); ok {
			return true
		}
	}
	return decodeOnce(t, g, data)
}

func decodeOnce(t *testing.T, g codec, data []byte) bool {
	if err := g.unmarshalBinary(data); err != nil {
		checkDecodeError(t, err)
		return false
	}
	g.TestString("probe")
	g.Test([]byte("probe"))
	_ = g.Stats()
	again, err := g.marshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, data) {
		t.Fatal("decoded filter re-encodes differently")
	}
	return true
}

// fuzzAdd checks that a decoded filter is usable: adding does not panic,
// and the key is found.
func fuzzAdd(t *testing.T, g Interface) {
	g.AddString("added")
	if !g.TestString("added") {
		t.Fatal("a key added to a decoded filter tests absent")
	}
}

// FuzzCountingDecode: no input may panic the counting decoder or make it
// allocate without bound; what decodes re-encodes to the same bytes.
func FuzzCountingDecode(f *testing.F) {
	addTypeSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Counting
		if fuzzDecode(t, &c, data) {
			fuzzAdd(t, &c)
			c.DeleteString("added")
			c.CountString("probe")
		}
	})
}

// FuzzScalableDecode is FuzzCountingDecode for scalable filters.
func FuzzScalableDecode(f *testing.F) {
	addTypeSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Scalable
		// Adding may grow the chain by a link as large as the file says;
		// only try it when that link is small.
		if fuzzDecode(t, &s, data) && s.links[len(s.links)-1].capacity <= 1<<16 && s.cfg.Growth <= 1<<8 {
			fuzzAdd(t, &s)
		}
	})
}

// FuzzWindowDecode is FuzzCountingDecode for windows.
func FuzzWindowDecode(f *testing.F) {
	addTypeSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var w Window
		w.SetClock(goldenClock)
		if fuzzDecode(t, &w, data) {
			fuzzAdd(t, &w)
		}
	})
}

// FuzzSplitBlockDecode is FuzzCountingDecode for split-block filters.
func FuzzSplitBlockDecode(f *testing.F) {
	addTypeSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var s SplitBlock
		if fuzzDecode(t, &s, data) {
			fuzzAdd(t, &s)
		}
	})
}

// FuzzReadParquet: no Parquet Bloom filter data may panic ReadParquet or
// make it allocate beyond the input; what reads writes back as a
// canonical header and the same bitset.
func FuzzReadParquet(f *testing.F) {
	g, _ := NewSplitBlockFromParams(Params{M: 2 * SplitBlockBits})
	g.AddString("seed")
	var b bytes.Buffer
	if _, err := g.WriteParquet(&b); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:16])
	f.Add([]byte{0x15, 0x40, 0x08, 0x0a, 0x03, 'a', 'b', 'c', 0x19, 0x35, 0x02, 0x04, 0x06, 0x1c, 0x11, 0x17, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0,
		0x1b, 0x01, 0x58, 0x02, 0x01, 'x', 0x0c, 0x04, 0x1c, 0x16, 0x02, 0, 0, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		s, err := ReadParquet(r)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		bitset := s.AppendBitset(nil)
		if n := len(data) - r.Len(); !bytes.Equal(data[n-len(bitset):n], bitset) {
			t.Fatal("the filter's bitset is not the bytes read")
		}
		fuzzAdd(t, s)
	})
}
