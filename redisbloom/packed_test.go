package redisbloom

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
	"testing"
)

// A small chain costs its Bloom and its bits, nothing more: a server holds
// millions of them.
func TestNewBloomAllocations(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := NewBloom(100, 0.01, 2, false, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("NewBloom(100, 0.01) makes %v allocations, want 2 (the Bloom and its bits)", allocs)
	}
}

// sameChain fails unless a and b answer every read alike: header, links,
// chunks, sizes.
func sameChain(t *testing.T, a, b *Bloom) {
	t.Helper()
	if !bytes.Equal(a.Header(), b.Header()) {
		t.Fatalf("headers differ:\n%x\n%x", a.Header(), b.Header())
	}
	if a.NumLinks() != b.NumLinks() || a.Size != b.Size || a.Capacity() != b.Capacity() ||
		a.MemUsage() != b.MemUsage() || a.DataBytes() != b.DataBytes() || a.FillRatio() != b.FillRatio() ||
		a.EstimatedFPR() != b.EstimatedFPR() || a.String() != b.String() || !a.SameLayout(b) {
		t.Fatalf("chains differ: %v / %v", a, b)
	}
	for i := 0; i < a.NumLinks(); i++ {
		x, y := a.Link(i), b.Link(i)
		if !bytes.Equal(x.Data, y.Data) {
			t.Fatalf("link %d bits differ", i)
		}
		if x.Bytes != y.Bytes || x.Bits != y.Bits || x.Size != y.Size || x.Error != y.Error ||
			math.Float64bits(x.BPE) != math.Float64bits(y.BPE) || x.Entries != y.Entries || x.Hashes != y.Hashes || x.N2 != y.N2 {
			t.Fatalf("link %d: %+v / %+v", i, x, y)
		}
	}
	for it := int64(1); ; {
		na, ca := a.Chunk(it)
		nb, cb := b.Chunk(it)
		if na != nb || !bytes.Equal(ca, cb) {
			t.Fatalf("chunk at %d differs", it)
		}
		if na == 0 {
			break
		}
		it = na
	}
}

// The packed link answers exactly as the full form of the same chain,
// before and after it grows, and whichever form it is loaded into.
func TestPackedMatchesFull(t *testing.T) {
	for _, c := range []struct {
		capacity   uint64
		rate       float64
		nonScaling bool
	}{{100, 0.01, false}, {1, 0.5, false}, {7, 0.001, true}, {1000, 0.0001, false}} {
		p, err := NewBloom(c.capacity, c.rate, 2, c.nonScaling, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !p.packed() {
			t.Fatalf("%+v: a new one-link chain is not packed", c)
		}
		f, _ := NewBloom(c.capacity, c.rate, 2, c.nonScaling, nil)
		f.Links() // the full form
		if f.packed() {
			t.Fatal("Links did not unpack the chain")
		}
		sameChain(t, p, f)
		for i := 0; i < int(3*c.capacity)+5; i++ {
			item := []byte("item" + strconv.Itoa(i))
			ap, errp := p.Add(item)
			af, errf := f.Add(item)
			if ap != af || errp != errf {
				t.Fatalf("%+v: add %d: packed %v %v, full %v %v", c, i, ap, errp, af, errf)
			}
			if p.Exists(item) != f.Exists(item) || p.Exists([]byte("x"+strconv.Itoa(i))) != f.Exists([]byte("x"+strconv.Itoa(i))) {
				t.Fatalf("%+v: exists after add %d differs", c, i)
			}
			if p.Prefetch(item) != f.Prefetch(item) {
				t.Fatalf("%+v: prefetch differs", c)
			}
		}
		sameChain(t, p, f)
		// Loading the dump of either gives the same chain again.
		l, err := LoadBloomHeader(f.Header(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for it := int64(1); ; {
			next, chunk := f.Chunk(it)
			if next == 0 {
				break
			}
			if err := l.LoadChunk(next, chunk); err != nil {
				t.Fatal(err)
			}
			it = next
		}
		sameChain(t, l, f)
		if l.NumLinks() == 1 && !l.packed() {
			t.Errorf("%+v: a loaded one-link chain of NewBloom's shape is not packed", c)
		}
		cl, err := p.Clone(nil)
		if err != nil {
			t.Fatal(err)
		}
		sameChain(t, cl, f)
	}
}

// A loaded link of any other shape (here: more bits per element than its
// error rate needs) keeps the full form, and its header comes back as it
// was loaded.
func TestUnpackableLinkKept(t *testing.T) {
	b, _ := NewBloom(100, 0.01, 2, false, nil)
	hdr := b.Header()
	l := hdr[chainHeaderLen:]
	bpe := math.Float64frombits(binary.LittleEndian.Uint64(l[32:])) + 0.01 // same hash count
	binary.LittleEndian.PutUint64(l[32:], math.Float64bits(bpe))
	lb, err := LoadBloomHeader(hdr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lb.packed() {
		t.Fatal("a link NewBloom would not make was packed")
	}
	if !bytes.Equal(lb.Header(), hdr) {
		t.Fatal("header changed on load")
	}
}

// Merging into a packed chain gives what merging into the full form gives.
func TestPackedMerge(t *testing.T) {
	a, _ := NewBloom(100, 0.01, 2, false, nil)
	af, _ := NewBloom(100, 0.01, 2, false, nil)
	af.Links()
	o, _ := NewBloom(100, 0.01, 2, false, nil)
	for i := 0; i < 60; i++ {
		a.Add([]byte("a" + strconv.Itoa(i)))
		af.Add([]byte("a" + strconv.Itoa(i)))
		o.Add([]byte("o" + strconv.Itoa(i)))
	}
	if err := a.Merge(o); err != nil {
		t.Fatal(err)
	}
	if err := af.Merge(o); err != nil {
		t.Fatal(err)
	}
	sameChain(t, a, af)
}

// A Guard set on a packed chain is told about its writes; removing it
// leaves the chain as small as before.
func TestPackedGuard(t *testing.T) {
	b, _ := NewBloom(100, 0.01, 2, false, nil)
	g := &countGuard{}
	b.SetGuard(g)
	b.Add([]byte("x"))
	if g.writes == 0 {
		t.Fatal("the guard was not told")
	}
	b.SetGuard(nil)
	if b.ext != nil {
		t.Fatal("removing the guard left the extension allocated")
	}
}

type countGuard struct{ writes int }

func (g *countGuard) Write(a []byte, off, n int) { g.writes++ }
func (g *countGuard) Release(a []byte)           {}
