package frozen_test

import (
	"bytes"
	"fmt"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/frozen"
)

func Example() {
	// A blacklist that is rebuilt nightly and never changes in between.
	b, err := frozen.NewBuilder(8, bloom.RandomSeed())
	if err != nil {
		panic(err)
	}
	for _, addr := range []string{"spam@example.com", "scam@example.net"} {
		b.AddString(addr)
	}
	f, err := b.Build()
	if err != nil {
		panic(err)
	}
	var file bytes.Buffer
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}
	// bloom.Read reads frozen sets with every other Bloom filter file.
	g, err := bloom.Read(&file)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.TestString("spam@example.com"), g.(*frozen.Filter).ApproxCount())
	// Output: true 2
}
