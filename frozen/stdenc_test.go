package frozen

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
)

// TestStandardEncoders round-trips a frozen filter through MarshalBinary,
// JSON and gob: the copy answers every key alike. The zero Filter tests
// every key absent and does not encode (ErrZero).
func TestStandardEncoders(t *testing.T) {
	var keys [][]byte
	for i := range 2000 {
		keys = append(keys, []byte("k"+strconv.Itoa(i)))
	}
	for _, bits := range []int{8, 16} {
		f, err := Build(keys, bits, 7)
		if err != nil {
			t.Fatal(err)
		}
		bin, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		check := func(how string, g *Filter) {
			t.Helper()
			again, err := g.MarshalBinary()
			if err != nil || !bytes.Equal(again, bin) {
				t.Fatalf("%d bits via %s: the copy writes another file (%v)", bits, how, err)
			}
			for i := range 20000 {
				k := []byte("k" + strconv.Itoa(i))
				if g.Test(k) != f.Test(k) {
					t.Fatalf("%d bits via %s: %q answers differently", bits, how, k)
				}
			}
		}
		var g Filter
		if err := g.UnmarshalBinary(bin); err != nil {
			t.Fatal(err)
		}
		check("binary", &g)
		js, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var j Filter
		if err := json.Unmarshal(js, &j); err != nil {
			t.Fatal(err)
		}
		check("json", &j)
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(f); err != nil {
			t.Fatal(err)
		}
		var h Filter
		if err := gob.NewDecoder(&buf).Decode(&h); err != nil {
			t.Fatal(err)
		}
		check("gob", &h)
		if err := h.UnmarshalBinary(append(bin, 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("trailing byte: %v", err)
		}
	}
	var z Filter
	if z.TestString("x") {
		t.Fatal("a zero Filter says present")
	}
	if _, err := json.Marshal(&z); !errors.Is(err, ErrZero) {
		t.Fatalf("json.Marshal of a zero Filter: %v", err)
	}
}
