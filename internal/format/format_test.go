package format

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// The classic, blocked, window and split-block types count no items, so a
// header of one of them with a count is refused by both ParseHeader and
// ReadHeader (which every reader of these types goes through): the count
// would be lost when the filter is written back. The types that count keep
// theirs.
func TestHeaderCountRefused(t *testing.T) {
	for _, c := range []struct {
		typ, hash uint8
		refused   bool
	}{
		{TypeClassic, HashXXH3Remix, true},
		{TypeBlocked, HashXXH3x64, true},
		{TypeWindow, HashXXH3, true},
		{TypeSplitBlock, HashXXH64, true},
		{TypeCounting, HashXXH3Remix, false},
		{TypeScalable, HashXXH3, false},
		{TypeCuckoo, HashXXH3, false},
		{TypeFrozen, HashXXH3, false},
		{TypeCMS, HashMurmur2, false},
	} {
		name := TypeName(c.typ)
		h := Header{Type: c.typ, Hash: c.hash, Seed: 7, M: 512, K: 3, Count: 1}
		b := h.Marshal()
		for _, read := range []struct {
			how string
			f   func() (Header, error)
		}{
			{"ParseHeader", func() (Header, error) { return ParseHeader(b) }},
			{"ReadHeader", func() (Header, error) { return ReadHeader(bytes.NewReader(b), c.typ) }},
			{"ReadHeader of any type", func() (Header, error) { return ReadHeader(bytes.NewReader(b), 0) }},
		} {
			got, err := read.f()
			switch {
			case c.refused && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "count 1")):
				t.Errorf("%s, count 1: %s: err = %v, want ErrCorrupt naming the count", name, read.how, err)
			case !c.refused && (err != nil || got.Count != 1):
				t.Errorf("%s, count 1: %s: count %d, err = %v, want the count kept", name, read.how, got.Count, err)
			}
		}
		h.Count = 0
		if _, err := ParseHeader(h.Marshal()); err != nil {
			t.Errorf("%s, count 0: err = %v", name, err)
		}
	}
	// The type is checked first: a reader that wants another type says so.
	b := (&Header{Type: TypeClassic, Hash: HashXXH3, M: 64, K: 1, Count: 1}).Marshal()
	if _, err := ReadHeader(bytes.NewReader(b), TypeCuckoo); !errors.Is(err, ErrType) {
		t.Errorf("a classic file read as cuckoo: err = %v, want ErrType", err)
	}
}
