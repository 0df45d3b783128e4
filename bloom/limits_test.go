package bloom

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// scalableFile returns the file of a scalable filter.
func scalableFile(t *testing.T, c ScalableConfig) []byte {
	t.Helper()
	s, err := NewScalableWith(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScalableForgedGrowthBounded reads forged scalable files (checksums
// recomputed) whose fields would size a later link far beyond memory: a
// growth above MaxGrowth, a link capacity that is not Capacity·Growth^i,
// and, within the limits, a large growth with a large capacity. Read
// refuses the first two; the third reads, and the Add that would need a
// 2^36-item link is refused with ErrFull at the size limit instead of
// allocating it. (A 1.9 KB file with growth 2^24 used to pass Read, and
// the Add that filled its last link asked for 28.5 GiB.)
func TestScalableForgedGrowthBounded(t *testing.T) {
	orig := scalableFile(t, ScalableConfig{Capacity: 1000, Rate: 0.01})
	const p = headerSize // the payload: growth u32, flags u32, tightening f64, links
	forge := func(f func(b []byte)) []byte {
		b := append([]byte(nil), orig...)
		f(b)
		return resign(b)
	}
	for name, b := range map[string][]byte{
		"growth 2^24":         forge(func(b []byte) { binary.LittleEndian.PutUint32(b[p:], 1<<24) }),
		"growth 2^32-1":       forge(func(b []byte) { binary.LittleEndian.PutUint32(b[p:], math.MaxUint32) }),
		"link capacity 2^40":  forge(func(b []byte) { binary.LittleEndian.PutUint64(b[p+16:], 1<<40) }),
		"rate below MinRate":  forge(func(b []byte) { binary.LittleEndian.PutUint64(b[48:], 1) }),
		"size limit 2^32 KiB": forge(func(b []byte) { binary.LittleEndian.PutUint32(b[p+16+28:], math.MaxUint32) }),
	} {
		if _, err := Read(bytes.NewReader(b)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Read: %v, want ErrCorrupt", name, err)
		}
	}

	// Within the limits: growth MaxGrowth, capacity 10^6 (the link is still
	// the one sized for 1,000 keys, so it closes early on its rate).
	b := forge(func(b []byte) {
		binary.LittleEndian.PutUint32(b[p:], MaxGrowth)
		binary.LittleEndian.PutUint64(b[40:], 1e6)
		binary.LittleEndian.PutUint64(b[p+16:], 1e6)
	})
	f, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	s := f.(*Scalable)
	for i := 0; err == nil && i < 100_000; i++ {
		_, err = s.TryAddString("k" + strconv.Itoa(i))
	}
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "MaxBytes") {
		t.Fatalf("after growth was needed: %v", err)
	}
	if st := s.Stats(); len(st.Parts) != 1 || s.bits()/8 > DefaultMaxBytes {
		t.Fatalf("%d links of %d bytes", len(st.Parts), s.bits()/8)
	}
}

// TestScalableMaxBytes fills scalable filters with distinct keys: the
// links never pass ScalableConfig.MaxBytes, TryAdd then says ErrFull, Add
// keeps every key, and the limit is kept in the file.
func TestScalableMaxBytes(t *testing.T) {
	const limit = 64 << 10
	s := mustScalable(t, ScalableConfig{Capacity: 1000, Rate: 0.01, MaxBytes: limit})
	var err error
	n := 0
	for ; err == nil; n++ {
		_, err = s.TryAddString("k" + strconv.Itoa(n))
	}
	if !errors.Is(err, ErrFull) || s.bits()/8 > limit || len(s.links) < 3 {
		t.Fatalf("err %v with %d links of %d bytes", err, len(s.links), s.bits()/8)
	}
	s.AddString("anyway")
	for i := range n - 1 {
		if !s.TestString("k" + strconv.Itoa(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var g Scalable
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if g.Config() != s.Config() || g.Config().MaxBytes != limit || !g.TestString("anyway") {
		t.Fatalf("read back: %+v", g.Config())
	}
	if _, err := g.TryAddString("surely new"); !errors.Is(err, ErrFull) && err != nil {
		t.Fatal(err)
	}
	if g.bits()/8 > limit {
		t.Fatalf("a filter read back grew to %d bytes", g.bits()/8)
	}
	// Its links pass a forged, smaller limit: refused.
	binary.LittleEndian.PutUint32(b[headerSize+16+28:], 1)
	if err := g.UnmarshalBinary(resign(b)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("links above the file's limit: %v", err)
	}
}

// TestScalableConfigLimits: the constructor refuses what would later ask
// for more than its limits, with a message that says which.
func TestScalableConfigLimits(t *testing.T) {
	for _, c := range []ScalableConfig{
		{Capacity: 1000, Rate: 0.01, Growth: MaxGrowth + 1},
		{Capacity: 1000, Rate: 0.01, Growth: math.MaxUint32},
		{Capacity: 1000, Rate: 0.01, MaxBytes: 100},              // below the first link
		{Capacity: 1000, Rate: 0.01, MaxBytes: MaxBits/8 + 1024}, // above MaxBits
		{Capacity: 1000, Rate: 1e-320},                           // below MinRate
	} {
		if _, err := NewScalableWith(c); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: err %v, want ErrInvalidParams", c, err)
		}
	}
	_, err := NewScalable(math.MaxUint64, 0.01)
	if !errors.Is(err, ErrInvalidParams) || strings.Contains(err.Error(), "full") {
		t.Errorf("NewScalable(huge): %v", err)
	}
}
