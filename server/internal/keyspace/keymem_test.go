package keyspace

import (
	"testing"
	"unsafe"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/internal/generation"
)

// The Entry is kept once per key: its size is paid by every key.
func TestEntrySize(t *testing.T) {
	if s := unsafe.Sizeof(Entry{}); s > 80 {
		t.Errorf("Entry is %d bytes, want at most 80", s)
	}
	// A string's entry and value are one allocation of the size class
	// they would take apart (80 + 64).
	if s := unsafe.Sizeof(stringEntry{}); s > 144 {
		t.Errorf("a string's entry and value are %d bytes, want at most 144", s)
	}
	if n := testing.AllocsPerRun(100, func() { sink = NewString("v", 0) }); n != 1 {
		t.Errorf("NewString makes %v allocations, want 1", n)
	}
}

var sink *Entry

// estimate remembers its last answer: whatever order sizes are asked in,
// each answer is the library's for that type, capacity and rate.
func TestEstimateRemembered(t *testing.T) {
	type ask struct {
		typ      uint8
		capacity uint64
		rate     float64
	}
	asks := []ask{
		{format.TypeBlocked, 100, 0.01}, {format.TypeBlocked, 100, 0.01}, {format.TypeBlocked, 1000, 0.01},
		{format.TypeBlocked, 1000, 0.001}, {format.TypeClassic, 1000, 0.001}, {format.TypeWindow, 1000, 0.001},
		{format.TypeBlocked, 100, 0.01}, {format.TypeClassic, 100, 0.01},
	}
	for _, a := range asks {
		var want bloom.Params
		switch a.typ {
		case format.TypeClassic:
			want = bloom.Estimate(a.capacity, a.rate)
		case format.TypeBlocked:
			want = bloom.EstimateBlocked(a.capacity, a.rate)
		case format.TypeWindow:
			want = bloom.EstimateBlocked(a.capacity, generation.Rate(a.rate))
			want.Hash = bloom.HashXXH3 // windows stay on hash id 1
		}
		if got := estimate(a.typ, a.capacity, a.rate); got != want {
			t.Errorf("estimate(%d, %d, %g) = %+v, want %+v", a.typ, a.capacity, a.rate, got, want)
		}
	}
}

// A native filter is kept once per key too; a window's own fields are
// only in windows.
func TestNativeFilterSize(t *testing.T) {
	if s := unsafe.Sizeof(NativeFilter{}); s > 128 {
		t.Errorf("NativeFilter is %d bytes, want at most 128", s)
	}
}
