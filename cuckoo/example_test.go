package cuckoo_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bloomkit/bloomkit/cuckoo"
)

func Example() {
	// A blacklist that entries can leave: room for 100,000 keys at about 3%.
	f, err := cuckoo.New(100_000)
	if err != nil {
		panic(err)
	}
	for _, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.2"} {
		if err := f.AddString(ip); err != nil {
			panic(err)
		}
	}
	fmt.Println(f.TestString("10.0.0.1"), f.CountString("10.0.0.2"), f.Len())
	f.DeleteString("10.0.0.1")
	fmt.Println(f.TestString("10.0.0.1"), f.TestString("10.0.0.2"))
	added, _ := f.AddUniqueString("10.0.0.2")
	fmt.Println("added again:", added)
	// Output:
	// true 2 3
	// false true
	// added again: false
}

func ExampleNewWith() {
	// 12-bit fingerprints: about 0.2% false positives at 12.8 bits a key;
	// NoGrow: report a full filter instead of growing.
	f, err := cuckoo.NewWith(cuckoo.Config{Buckets: 4, FingerprintBits: 12, NoGrow: true})
	if err != nil {
		panic(err)
	}
	n := 0
	for ; ; n++ {
		if err := f.AddString(fmt.Sprint("key", n)); err != nil {
			fmt.Println(errors.Is(err, cuckoo.ErrFull), f.Len() == uint64(n))
			break
		}
	}
	fmt.Printf("%d slots, %.1f%% rate when full\n", f.Stats().Slots, 100*cuckoo.ExpectedRate(4, 12, 1))
	// Output:
	// true true
	// 16 slots, 0.2% rate when full
}

func ExampleFilter_WriteTo() {
	f, _ := cuckoo.New(1000)
	_ = f.AddString("saved")
	var buf bytes.Buffer
	if _, err := f.WriteTo(&buf); err != nil {
		panic(err)
	}
	g, err := cuckoo.Read(&buf)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.TestString("saved"), g.Len())
	// Output: true 1
}
