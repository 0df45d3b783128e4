package bloom

import (
	"bytes"
	"testing"

	"github.com/bloomkit/bloomkit/frozen"
)

// TestReadFrozen: Read returns frozen sets (which are Testers, not
// Interfaces) from their files.
func TestReadFrozen(t *testing.T) {
	f, err := frozen.Build([][]byte{[]byte("a"), []byte("b")}, 16, 9)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	g, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.(*frozen.Filter); !ok || !g.TestString("a") || !g.Test([]byte("b")) {
		t.Fatalf("Read gave %T", g)
	}
	if _, ok := g.(Interface); ok {
		t.Error("a frozen set claims keys can be added")
	}
}

// TestReadRibbon: Read returns ribbon filters (Testers) from their files.
func TestReadRibbon(t *testing.T) {
	f, err := frozen.BuildRibbon([][]byte{[]byte("a"), []byte("b")}, 0.001, 9)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	g, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.(*frozen.Ribbon); !ok || !g.TestString("a") || !g.Test([]byte("b")) {
		t.Fatalf("Read gave %T", g)
	}
	if _, ok := g.(Interface); ok {
		t.Error("a ribbon claims keys can be added")
	}
}
