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

func ExampleBuildRibbon() {
	// A dictionary of words at a 0.1% false-positive rate: about 10.4
	// bits a word from a million words on (a classic Bloom filter needs
	// 14.4).
	words := [][]byte{[]byte("apple"), []byte("banana"), []byte("cherry")}
	f, err := frozen.BuildRibbon(words, 0.001, bloom.RandomSeed())
	if err != nil {
		panic(err)
	}
	var file bytes.Buffer
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}
	g, err := frozen.ReadRibbon(&file)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.TestString("banana"), g.Len(), g.EstimatedFPR() <= 0.001)
	// Output: true 3 true
}
