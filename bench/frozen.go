package main

// ---- Frozen sets (bloomkit's frozen package) -------------------------------
//
// This section is kept apart from the
// generator's own library list: init appends bloomkit's frozen rows after the
// FastFilter ones, so RESULTS.md shows bloomkit's binary fuse filters (8- and
// 16-bit fingerprints, keys hashed with XXH3 and a seed, as `bloom build
// --static` builds them) beside the Bloom rows and the raw FastFilter engine
// they wrap. Select them alone with -libs frozen8,frozen16. The ribbon
// row (-libs ribbon) is bloomkit's frozen.Ribbon, built from the keys at
// each rate asked for (its rate is not fixed).

import (
	"github.com/bloomkit/bloomkit/frozen"
)

func init() {
	libs = append(libs,
		&lib{id: "frozen8", name: "bloomkit frozen (8-bit)", static: true, make: newFrozen(8)},
		&lib{id: "frozen16", name: "bloomkit frozen (16-bit)", static: true, make: newFrozen(16)},
		&lib{id: "ribbon", name: "bloomkit ribbon", built: true, make: newRibbon},
	)
}

type frozenInst struct {
	b *frozen.Builder
	f *frozen.Filter
}

func newFrozen(bits int) func(n uint64, p float64) (inst, error) {
	return func(n uint64, _ float64) (inst, error) {
		b, err := frozen.NewBuilder(bits, 0)
		if err != nil {
			return nil, err
		}
		return &frozenInst{b: b}, nil
	}
}

func (x *frozenInst) add(keys []string) {
	b := x.b
	for _, k := range keys {
		b.AddString(k)
	}
}

func (x *frozenInst) finish() (err error) {
	x.f, err = x.b.Build()
	x.b = nil
	return err
}

func (x *frozenInst) count(keys []string) int {
	c, f := 0, x.f
	for _, k := range keys {
		if f.TestString(k) {
			c++
		}
	}
	return c
}

func (x *frozenInst) countBatch([]string, []bool) (int, []bool) { panic("no batch API") }
func (x *frozenInst) nominalBytes() uint64                      { return x.f.SizeBits() / 8 }
func (x *frozenInst) probes() int                               { return 3 }

type ribbonInst struct {
	b *frozen.RibbonBuilder
	f *frozen.Ribbon
}

func newRibbon(n uint64, p float64) (inst, error) {
	b, err := frozen.NewRibbonBuilder(p, 0)
	if err != nil {
		return nil, err
	}
	return &ribbonInst{b: b}, nil
}

func (x *ribbonInst) add(keys []string) {
	b := x.b
	for _, k := range keys {
		b.AddString(k)
	}
}

func (x *ribbonInst) finish() (err error) {
	x.f, err = x.b.Build()
	x.b = nil
	return err
}

func (x *ribbonInst) count(keys []string) int {
	c, f := 0, x.f
	for _, k := range keys {
		if f.TestString(k) {
			c++
		}
	}
	return c
}

func (x *ribbonInst) countBatch([]string, []bool) (int, []bool) { panic("no batch API") }
func (x *ribbonInst) nominalBytes() uint64                      { return x.f.SizeBits() / 8 }
func (x *ribbonInst) probes() int                               { return 0 }
