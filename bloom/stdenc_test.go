package bloom

import (
	"bytes"
	"encoding"
	"encoding/gob"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// encodable is what every filter type offers the standard encoders.
type encodable interface {
	Interface
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
	json.Marshaler
	json.Unmarshaler
}

// encodableTypes returns, for each type, a filter holding keys and a fresh
// zero value of the same type.
func encodableTypes(t *testing.T, ks []string) map[string][2]encodable {
	t.Helper()
	f, _ := New(1000, 0.01)
	b, _ := NewBlocked(1000, 0.01)
	c, _ := NewCounting(1000, 0.01)
	s := mustScalable(t, ScalableConfig{Capacity: 100, Rate: 0.01, Seed: 9})
	now := time.Unix(1_700_000_000, 0)
	w := mustWindow(t, WindowConfig{Window: time.Hour, Items: 1000, Rate: 0.01, Clock: func() time.Time { return now }})
	out := map[string][2]encodable{
		"Filter": {f, new(Filter)}, "Blocked": {b, new(Blocked)}, "Counting": {c, new(Counting)},
		"Scalable": {s, new(Scalable)}, "Window": {w, &Window{clock: func() time.Time { return now }}},
	}
	for _, p := range out {
		for _, k := range ks {
			p[0].AddString(k)
		}
	}
	return out
}

// TestStandardEncoders round-trips every type through MarshalBinary, JSON
// (alone and as a struct field) and gob: the copy answers every key alike
// and writes the same file. (json.Marshal used to write {} for a filter,
// which decoded to a zero Filter answering "present" for every key.)
func TestStandardEncoders(t *testing.T) {
	in := keys("std", 0, 500)
	out := keys("absent", 0, 5000)
	for name, p := range encodableTypes(t, in) {
		f := p[0]
		want, err := f.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		check := func(how string, g encodable) {
			t.Helper()
			got, err := g.MarshalBinary()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s via %s: the copy writes another file (%v)", name, how, err)
			}
			for _, k := range in {
				if !g.TestString(k) {
					t.Fatalf("%s via %s: %q lost", name, how, k)
				}
			}
			for _, k := range out {
				if g.TestString(k) != f.TestString(k) {
					t.Fatalf("%s via %s: %q answers differently", name, how, k)
				}
			}
		}

		g := p[1]
		if err := g.UnmarshalBinary(want); err != nil {
			t.Fatalf("%s: UnmarshalBinary: %v", name, err)
		}
		check("binary", g)

		js, err := json.Marshal(f)
		if err != nil || !bytes.HasPrefix(js, []byte(`"`)) {
			t.Fatalf("%s: json.Marshal: %.40s %v", name, js, err)
		}
		var wrapped struct {
			Name   string
			Filter encodable
		}
		wrapped.Filter = p[1]
		if err := json.Unmarshal([]byte(`{"Name":"x","Filter":`+string(js)+`}`), &wrapped); err != nil {
			t.Fatalf("%s: json.Unmarshal: %v", name, err)
		}
		check("json", wrapped.Filter)

		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(f); err != nil {
			t.Fatalf("%s: gob: %v", name, err)
		}
		if err := gob.NewDecoder(&buf).Decode(p[1]); err != nil {
			t.Fatalf("%s: gob decode: %v", name, err)
		}
		check("gob", p[1])

		// Bad input changes nothing and says why.
		before, _ := p[1].MarshalBinary()
		for _, bad := range [][]byte{nil, want[:len(want)-1], append(append([]byte(nil), want...), 0)} {
			if err := p[1].UnmarshalBinary(bad); err == nil {
				t.Fatalf("%s: UnmarshalBinary of %d bad bytes succeeded", name, len(bad))
			}
		}
		for _, bad := range []string{`{}`, `null`, `"not base64!"`, `12`} {
			if err := p[1].UnmarshalJSON([]byte(bad)); err == nil {
				t.Fatalf("%s: UnmarshalJSON(%s) succeeded", name, bad)
			}
		}
		if after, _ := p[1].MarshalBinary(); !bytes.Equal(before, after) {
			t.Fatalf("%s: a failed decode changed the filter", name)
		}
	}
}

// TestZeroValues: the zero value of every type holds nothing and says so:
// every key tests absent (also through TestMany and Sync), the statistics
// are zero (no NaN), encoding fails with ErrZero, and an add, which has no
// error to return, panics with a value wrapping ErrZero. (A zero Filter or
// Counting used to answer "present" for every key; a zero Blocked,
// Scalable or Window panicked on Test with an index error.)
func TestZeroValues(t *testing.T) {
	zeros := map[string]encodable{
		"Filter": new(Filter), "Blocked": new(Blocked), "Counting": new(Counting),
		"Scalable": new(Scalable), "Window": new(Window),
	}
	for name, z := range zeros {
		if z.TestString("x") || z.Test([]byte("y")) {
			t.Errorf("%s: the zero value says present", name)
		}
		st := z.Stats()
		if math.IsNaN(st.FillRatio) || math.IsNaN(st.EstimatedFPR) || st.ApproxCount != 0 || st.EstimatedFPR != 0 {
			t.Errorf("%s: Stats of the zero value: %+v", name, st)
		}
		if _, err := z.MarshalBinary(); !errors.Is(err, ErrZero) {
			t.Errorf("%s: MarshalBinary: %v", name, err)
		}
		if _, err := json.Marshal(z); !errors.Is(err, ErrZero) {
			t.Errorf("%s: json.Marshal: %v", name, err)
		}
		if err := gob.NewEncoder(new(bytes.Buffer)).Encode(z); err == nil || !strings.Contains(err.Error(), ErrZero.Error()) {
			t.Errorf("%s: gob: %v", name, err)
		}
		if _, err := z.(io.WriterTo).WriteTo(io.Discard); !errors.Is(err, ErrZero) {
			t.Errorf("%s: WriteTo: %v", name, err)
		}
		for verb, add := range map[string]func(){
			"Add": func() { z.AddString("x") }, "TestAndAdd": func() { z.TestAndAddString("x") },
		} {
			if err := recovered(add); !errors.Is(err, ErrZero) {
				t.Errorf("%s.%s on the zero value: %v, want a panic wrapping ErrZero", name, verb, err)
			}
		}
		if z.TestString("x") {
			t.Errorf("%s: the zero value says present after a refused add", name)
		}
	}
	var f Filter
	var b Blocked
	if got := TestMany(&f, []string{"a", "b"}, nil); got[0] || got[1] {
		t.Error("TestMany on a zero Filter says present")
	}
	if got := TestMany(&b, []string{"a", "b"}, nil); got[0] || got[1] {
		t.Error("TestMany on a zero Blocked says present")
	}
	if f.Sync().TestString("a") || b.Sync().TestString("a") {
		t.Error("Sync().Test on a zero value says present")
	}
	for name, add := range map[string]func(){
		"AddMany Filter": func() { AddMany(&f, []string{"a"}) }, "AddMany Blocked": func() { AddMany(&b, []string{"a"}) },
		"Sync Filter": func() { f.Sync().AddString("a") }, "Sync Blocked": func() { b.Sync().AddString("a") },
	} {
		if err := recovered(add); !errors.Is(err, ErrZero) {
			t.Errorf("%s on a zero value: %v", name, err)
		}
	}
	var c Counting
	if c.CountString("x") != 0 || c.DeleteString("x") {
		t.Error("a zero Counting counts or deletes a key")
	}
	var s Scalable
	if _, err := s.TryAddString("x"); !errors.Is(err, ErrZero) {
		t.Errorf("TryAdd on a zero Scalable: %v", err)
	}
}

// recovered runs fn and returns the error it panicked with, if any.
func recovered(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = errors.New("a panic that is not an error")
			}
		}
	}()
	fn()
	return nil
}
