package cuckoo

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/bloom"
)

// TestNoAllocationPerKey: the key methods allocate nothing, for a string
// key as for a []byte one, with a key longer than the 32 bytes Go converts
// on the stack.
func TestNoAllocationPerKey(t *testing.T) {
	s := strings.Repeat("https://example.com/a/long/path/", 4)
	b := []byte(s)
	f, err := New(1000)
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		_ = f.Add(b)
		_ = f.AddString(s)
		_ = f.Test(b) && f.TestString(s)
		_ = f.Count(b) + f.CountString(s)
		_ = f.Delete(b) && f.DeleteString(s)
		_, _ = f.AddUnique(b)
		_, _ = f.AddUniqueString(s)
		_ = f.Delete(b)
	})
	if n != 0 {
		t.Errorf("%v allocations per round of key methods", n)
	}
}

// TestAPISize keeps the method set in step with the bloom package's: the
// same verbs with []byte and string forms, batch forms as the generic
// functions AddMany and TestMany, one Stats, streams for encoding and the
// standard encoders (binary, JSON; gob uses binary) wrapped around them.
func TestAPISize(t *testing.T) {
	want := []string{
		"Add", "AddString", "AddUnique", "AddUniqueString", "Clone", "Config", "Count", "CountString",
		"Delete", "DeleteString", "Equal", "Len", "MarshalBinary", "MarshalJSON", "ReadFrom", "Reset", "Stats", "Test",
		"TestString", "UnmarshalBinary", "UnmarshalJSON", "WriteTo",
	}
	typ := reflect.TypeOf(&Filter{})
	var got []string
	for i := range typ.NumMethod() {
		got = append(got, typ.Method(i).Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("cuckoo.Filter has methods\n%v\nwant\n%v", got, want)
	}
}

// A cuckoo filter is a bloom.Tester (what bloom.Read returns; the CLI tests
// any filter through it) but not a bloom.Interface: its Add returns an
// error and it has no TestAndAdd. The bloom package's documentation says
// so; this keeps the two in step.
var _ bloom.Tester = (*Filter)(nil)

func TestNotABloomInterface(t *testing.T) {
	if _, ok := any(new(Filter)).(bloom.Interface); ok {
		t.Error("cuckoo.Filter now satisfies bloom.Interface: update bloom/doc.go, which says it does not")
	}
}
