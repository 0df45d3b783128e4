package bloom

import (
	"errors"
	"testing"
)

// The zero Sync keeps the package's zero-value promise: it tests every
// key absent, and an add panics with a value wrapping ErrZero rather than
// drop the key (it panicked with a nil dereference on Test).
func TestZeroSync(t *testing.T) {
	var s Sync
	if s.Test([]byte("k")) || s.TestString("k") || s.TestHash(Hash(0, []byte("k"))) {
		t.Fatal("a zero Sync tests a key present")
	}
	for name, add := range map[string]func(){
		"Add":              func() { s.Add([]byte("k")) },
		"AddString":        func() { s.AddString("k") },
		"AddHash":          func() { s.AddHash(Hash(0, []byte("k"))) },
		"TestAndAdd":       func() { s.TestAndAdd([]byte("k")) },
		"TestAndAddString": func() { s.TestAndAddString("k") },
	} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, ErrZero) {
					t.Errorf("%s on a zero Sync: panic %v, want one wrapping ErrZero", name, err)
				}
			}()
			add()
		}()
	}
}
