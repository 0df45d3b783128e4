package bloom

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNoAllocationPerKey: every method that takes a key, and the batch
// functions with a reused dst, allocate nothing, for string keys as for
// []byte ones. The key is longer than the 32 bytes Go converts on the stack,
// so a method that copied its key (a []byte(s) conversion, say) would show
// one allocation a call.
func TestNoAllocationPerKey(t *testing.T) {
	s := strings.Repeat("https://example.com/a/long/path/", 4) // 128 bytes
	b := []byte(s)
	var ss []string
	var bs [][]byte
	for i := range 1000 {
		ss = append(ss, s+strconv.Itoa(i))
		bs = append(bs, b)
	}
	dst := make([]bool, 0, len(ss))
	now := time.Unix(1_700_000_000, 0)

	f, _ := New(1000, 0.01)
	bl, _ := NewBlocked(1000, 0.01)
	c, _ := NewCounting(1000, 0.01)
	sc, _ := NewScalable(1_000_000, 0.01)
	w, _ := NewWindowWith(WindowConfig{Window: time.Hour, Items: 1000, Rate: 0.01, Clock: func() time.Time { return now }})
	h, hb := f.Params().HashKeyString(s), bl.Params().HashKeyString(s)
	cases := []struct {
		name string
		op   func()
	}{
		{"Filter", func() {
			f.Add(b)
			f.AddString(s)
			f.AddHash(h)
			_ = f.Test(b) && f.TestString(s) && f.TestHash(h) && f.TestAndAdd(b) && f.TestAndAddString(s)
		}},
		{"Blocked", func() {
			bl.Add(b)
			bl.AddString(s)
			bl.AddHash(hb)
			_ = bl.Test(b) && bl.TestString(s) && bl.TestHash(hb) && bl.TestAndAdd(b) && bl.TestAndAddString(s)
		}},
		{"Sync", func() {
			for i, y := range []Sync{f.Sync(), bl.Sync()} {
				h := [2]KeyHash{h, hb}[i]
				y.Add(b)
				y.AddString(s)
				y.AddHash(h)
				_ = y.Test(b) && y.TestString(s) && y.TestHash(h) && y.TestAndAdd(b) && y.TestAndAddString(s)
			}
		}},
		{"Counting", func() {
			c.Add(b)
			c.AddString(s)
			_ = c.Test(b) && c.TestString(s) && c.TestAndAdd(b) && c.TestAndAddString(s)
			_ = c.Count(b) + c.CountString(s)
			_ = c.Delete(b) && c.DeleteString(s)
		}},
		{"Scalable", func() {
			sc.Add(b)
			sc.AddString(s)
			_ = sc.Test(b) && sc.TestString(s) && sc.TestAndAdd(b) && sc.TestAndAddString(s)
			_, _ = sc.TryAdd(b)
			_, _ = sc.TryAddString(s)
		}},
		{"Window", func() {
			w.Add(b)
			w.AddString(s)
			_ = w.Test(b) && w.TestString(s) && w.TestAndAdd(b) && w.TestAndAddString(s)
		}},
	}
	for _, tc := range cases {
		if n := testing.AllocsPerRun(100, tc.op); n != 0 {
			t.Errorf("%s: %v allocations per call with a %d-byte key", tc.name, n, len(s))
		}
	}
	// The batch functions allocate nothing either (TestBatchNoAlloc checks
	// them in more cases).
	many := testing.AllocsPerRun(20, func() {
		AddMany(f, ss)
		AddMany(bl, bs)
		dst = TestMany(f, bs, dst[:0])
		dst = TestMany(bl, ss, dst[:0])
	})
	if many != 0 {
		t.Errorf("AddMany/TestMany: %v allocations for 4 calls of %d keys", many, len(ss))
	}
}

// TestAPISize keeps the method sets deliberate: one verb set
// ([]byte and string forms of Add, Test, TestAndAdd; hashed forms on the
// two layouts and Sync), the batch forms as the generic functions AddMany
// and TestMany, one Stats for every figure of fill, streams for encoding
// and the standard encoders as thin wrappers over them.
// A method added to one type should be added to all that can have it, or
// be a package function; change the table with the API's documentation.
func TestAPISize(t *testing.T) {
	keyVerbs := []string{"Add", "AddString", "Test", "TestAndAdd", "TestAndAddString", "TestString"}
	whole := []string{"Clone", "Equal", "ReadFrom", "Reset", "Stats", "WriteTo",
		"MarshalBinary", "UnmarshalBinary", "MarshalJSON", "UnmarshalJSON"} // the standard encoders wrap the streams
	hashed := []string{"AddHash", "TestHash"}
	want := map[string][]string{
		"Filter":   concat(keyVerbs, whole, hashed, []string{"Intersect", "Params", "Sync", "Union"}),
		"Blocked":  concat(keyVerbs, whole, hashed, []string{"Intersect", "Params", "Sync", "Union"}),
		"Counting": concat(keyVerbs, whole, []string{"Count", "CountString", "Delete", "DeleteString", "Len", "Params"}),
		"Scalable": concat(keyVerbs, whole, []string{"Config", "Len", "TryAdd", "TryAddString"}),
		"Window":   concat(keyVerbs, whole, []string{"Config", "SetClock"}),
		"Sync":     concat(keyVerbs, hashed),
		// Parquet's layout: its hash is a uint64, its bitset and the
		// Parquet header its own forms.
		"SplitBlock":     concat(keyVerbs, whole, hashed, []string{"AppendBitset", "Intersect", "Len", "Params", "Sync", "Union", "WriteParquet"}),
		"SplitBlockSync": concat(keyVerbs, hashed),
	}
	for _, v := range []any{&Filter{}, &Blocked{}, &Counting{}, &Scalable{}, &Window{}, Sync{}, &SplitBlock{}, SplitBlockSync{}} {
		typ := reflect.TypeOf(v)
		var got []string
		for i := range typ.NumMethod() {
			got = append(got, typ.Method(i).Name)
		}
		name := strings.TrimPrefix(typ.String(), "*bloom.")
		name = strings.TrimPrefix(name, "bloom.")
		w := want[name]
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s has methods\n%v\nwant\n%v", name, got, w)
		}
	}
}

func concat(lists ...[]string) []string { return slices.Concat(lists...) }
