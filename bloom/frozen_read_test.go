package bloom

import (
	"bytes"
	"io"
	"testing"

	"github.com/bloomkit/bloomkit/frozen"
)

// TestReadFrozen: Read returns the static sets of package frozen (binary
// fuse and ribbon filters, which are Testers, not Interfaces) from their
// files.
func TestReadFrozen(t *testing.T) {
	keys := [][]byte{[]byte("a"), []byte("b")}
	for _, c := range []struct {
		name  string
		build func() (io.WriterTo, error)
		is    func(Tester) bool
	}{
		{"fuse", func() (io.WriterTo, error) { return frozen.Build(keys, 16, 9) },
			func(g Tester) bool { _, ok := g.(*frozen.Filter); return ok }},
		{"ribbon", func() (io.WriterTo, error) { return frozen.BuildRibbon(keys, 0.001, 9) },
			func(g Tester) bool { _, ok := g.(*frozen.Ribbon); return ok }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := c.build()
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
			if !c.is(g) || !g.TestString("a") || !g.Test([]byte("b")) {
				t.Fatalf("Read gave %T", g)
			}
			if _, ok := g.(Interface); ok {
				t.Errorf("a %s set claims keys can be added", c.name)
			}
		})
	}
}
