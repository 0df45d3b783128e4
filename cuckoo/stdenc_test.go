package cuckoo

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// TestStandardEncoders round-trips a grown filter with deletions through
// MarshalBinary, JSON (as a struct field) and gob: the copy is Equal and
// counts every key alike. A zero Filter does not encode (ErrZero).
func TestStandardEncoders(t *testing.T) {
	f := mustNew(t, Config{Capacity: 100, Seed: 3, MaxBytes: 1 << 20})
	for i := range 1000 {
		if err := f.AddString("k" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 1000; i += 3 {
		f.DeleteString("k" + strconv.Itoa(i))
	}
	check := func(how string, g *Filter) {
		t.Helper()
		if !g.Equal(f) || g.Config() != f.Config() {
			t.Fatalf("via %s: the copy differs", how)
		}
		for i := range 1000 {
			if k := "k" + strconv.Itoa(i); g.CountString(k) != f.CountString(k) {
				t.Fatalf("via %s: %q counts differently", how, k)
			}
		}
	}
	bin, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var g Filter
	if err := g.UnmarshalBinary(bin); err != nil {
		t.Fatal(err)
	}
	check("binary", &g)

	js, err := json.Marshal(struct{ F *Filter }{f})
	if err != nil {
		t.Fatal(err)
	}
	var wrapped struct{ F *Filter }
	if err := json.Unmarshal(js, &wrapped); err != nil {
		t.Fatal(err)
	}
	check("json", wrapped.F)

	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(f); err != nil {
		t.Fatal(err)
	}
	var h Filter
	if err := gob.NewDecoder(&buf).Decode(&h); err != nil {
		t.Fatal(err)
	}
	check("gob", &h)

	for _, bad := range []string{`{}`, `null`, `"AAAA"`} {
		if err := h.UnmarshalJSON([]byte(bad)); err == nil {
			t.Fatalf("UnmarshalJSON(%s) succeeded", bad)
		}
	}
	check("failed decodes", &h)

	var z Filter
	if _, err := z.MarshalBinary(); !errors.Is(err, ErrZero) {
		t.Fatalf("MarshalBinary of a zero Filter: %v", err)
	}
	if _, err := json.Marshal(&z); !errors.Is(err, ErrZero) {
		t.Fatalf("json.Marshal of a zero Filter: %v", err)
	}
}
