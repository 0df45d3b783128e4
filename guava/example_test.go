package guava_test

import (
	"bytes"
	"fmt"

	"github.com/bloomkit/bloomkit/guava"
)

func Example() {
	// A filter for a JVM service: Java reads it with
	// BloomFilter.readFrom(in, Funnels.stringFunnel(UTF_8)).
	f, err := guava.New(1000, 0.01)
	if err != nil {
		panic(err)
	}
	f.AddString("alice@example.com")
	var file bytes.Buffer
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}
	g, err := guava.Read(&file)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.M(), g.K(), g.TestString("alice@example.com"), g.TestString("eve@example.com"))
	// Output: 9600 7 true false
}
