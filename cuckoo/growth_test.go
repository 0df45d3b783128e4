package cuckoo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestDuplicatesBounded adds one key again and again: the first 2·b copies
// are stored, every later one is refused with ErrTooManyCopies and the
// filter neither grows nor changes. (A key added in a loop used to chain a
// new table every 2·b copies, doubling each time, until the process ran
// out of memory: 20 tables and 1.1 GB after 160 copies.)
func TestDuplicatesBounded(t *testing.T) {
	for _, b := range []uint32{1, 2, 4, 8} {
		f := mustNew(t, Config{Capacity: 1000, BucketSize: b})
		size := f.Stats().SizeBytes
		for i := range 200 {
			err := f.AddString("same")
			if i < int(2*b) {
				if err != nil {
					t.Fatalf("b=%d: copy %d: %v", b, i+1, err)
				}
				continue
			}
			if !errors.Is(err, ErrTooManyCopies) {
				t.Fatalf("b=%d: copy %d: err %v, want ErrTooManyCopies", b, i+1, err)
			}
		}
		st := f.Stats()
		if st.Tables != 1 || st.SizeBytes != size || f.Len() != uint64(2*b) || f.CountString("same") != uint64(2*b) {
			t.Fatalf("b=%d: %d tables of %d bytes (was %d), len %d, count %d", b, st.Tables, st.SizeBytes, size, f.Len(), f.CountString("same"))
		}
		// A deleted copy makes room for one more.
		if !f.DeleteString("same") || f.AddString("same") != nil || !errors.Is(f.AddString("same"), ErrTooManyCopies) {
			t.Fatalf("b=%d: delete then add did not free exactly one copy", b)
		}
		if n, err := AddMany(f, []string{"other", "same", "third"}); n != 1 || !errors.Is(err, ErrTooManyCopies) {
			t.Fatalf("b=%d: AddMany added %d, err %v", b, n, err)
		}
	}
}

// TestGrowthCeiling fills filters with distinct keys until they refuse
// one: the tables never pass Config.MaxBytes, the refusal is ErrFull and
// names the limit, nothing added before is lost, and the limit survives
// a round trip through the file format.
func TestGrowthCeiling(t *testing.T) {
	for _, limit := range []uint64{8 << 10, 100 << 10} {
		f := mustNew(t, Config{Capacity: 1000, MaxBytes: limit})
		var err error
		n := 0
		for ; err == nil; n++ {
			err = f.AddString("k" + strconv.Itoa(n))
		}
		if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), "MaxBytes") {
			t.Fatalf("limit %d: err %v", limit, err)
		}
		if st := f.Stats(); st.SizeBytes > limit || st.Tables < 2 {
			t.Fatalf("limit %d: %d tables of %d bytes", limit, st.Tables, st.SizeBytes)
		}
		for i := range n - 1 {
			if !f.TestString("k" + strconv.Itoa(i)) {
				t.Fatalf("limit %d: key %d lost", limit, i)
			}
		}
		var buf bytes.Buffer
		if _, err := f.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		file := append([]byte(nil), buf.Bytes()...)
		g, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Equal(f) || g.Config().MaxBytes != limit {
			t.Fatalf("limit %d: read back with limit %d", limit, g.Config().MaxBytes)
		}
		for i := n; err == nil; i++ {
			err = g.AddString("k" + strconv.Itoa(i))
		}
		if st := g.Stats(); !errors.Is(err, ErrFull) || st.SizeBytes > limit {
			t.Fatalf("limit %d: a filter read back grew to %d bytes: %v", limit, st.SizeBytes, err)
		}
		// A forged file whose tables pass its own limit is refused.
		b := file
		binary.LittleEndian.PutUint32(b[offNT+4:], 1)
		if _, err := Read(bytes.NewReader(resign(b))); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("limit %d: a file with tables above its limit: %v", limit, err)
		}
	}
}

// TestDefaultGrowthCeiling checks the default limit: DefaultMaxBytes for
// a small first table, four times the first table for a large one.
func TestDefaultGrowthCeiling(t *testing.T) {
	small := mustNew(t, Config{Capacity: 1000}).cfg
	if got := small.maxBytes(); got != DefaultMaxBytes {
		t.Errorf("small filter: limit %d, want %d", got, DefaultMaxBytes)
	}
	big := Config{Buckets: 1 << 30, BucketSize: 4, FingerprintBits: 8} // 4 GiB: not allocated
	if got := big.maxBytes(); got != 16<<30 {
		t.Errorf("4 GiB first table: limit %d, want 16 GiB", got)
	}
	for _, c := range []Config{
		{Capacity: 1000, MaxBytes: 100},              // below the first table
		{Capacity: 1000, MaxBytes: MaxBits/8 + 1024}, // above MaxBits
	} {
		if _, err := NewWith(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err %v, want ErrInvalidConfig", c, err)
		}
	}
	if c := mustNew(t, Config{Capacity: 1000, MaxBytes: 5000}).Config(); c.MaxBytes != 5120 {
		t.Errorf("MaxBytes 5000 became %d, want 5120 (a whole KiB)", c.MaxBytes)
	}
}

// TestZeroFilter: the zero Filter holds nothing and says so: every key
// tests absent, adding or writing fails with ErrZero, and nothing panics.
func TestZeroFilter(t *testing.T) {
	var f Filter
	if f.TestString("x") || f.Test([]byte("x")) || f.CountString("x") != 0 || f.DeleteString("x") || f.Len() != 0 {
		t.Fatal("a zero filter answers as if it held a key")
	}
	if err := f.AddString("x"); !errors.Is(err, ErrZero) {
		t.Fatalf("Add: %v", err)
	}
	if _, err := f.AddUniqueString("x"); !errors.Is(err, ErrZero) {
		t.Fatalf("AddUnique: %v", err)
	}
	if _, err := AddMany(&f, []string{"x"}); !errors.Is(err, ErrZero) {
		t.Fatalf("AddMany: %v", err)
	}
	if got := TestMany(&f, []string{"x", "y"}, nil); got[0] || got[1] {
		t.Fatal("TestMany on a zero filter says present")
	}
	if st := f.Stats(); st != (Stats{}) {
		t.Fatalf("Stats of a zero filter: %+v", st)
	}
	if _, err := f.WriteTo(&bytes.Buffer{}); !errors.Is(err, ErrZero) {
		t.Fatalf("WriteTo: %v", err)
	}
	f.Reset()
	_ = f.Clone()
}

// TestZeroCapacity: New(0) is the smallest filter (one bucket), as
// bloom.New(0, p) is, and it works (it used to be an error).
func TestZeroCapacity(t *testing.T) {
	f, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	if f.Config().Buckets != 1 {
		t.Fatalf("New(0) has %d buckets", f.Config().Buckets)
	}
	for i := range 100 {
		if err := f.AddString("k" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		if !f.TestString("k" + strconv.Itoa(i)) {
			t.Fatalf("key %d lost", i)
		}
	}
}
