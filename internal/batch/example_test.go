package batch_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/internal/batch"
)

func ExampleEach() {
	keys := make([]string, 150)
	for i := range keys {
		keys[i] = fmt.Sprint("key ", i)
	}
	var prefetched, probed []int
	batch.Each(keys, 0,
		func(h [][2]uint64) { prefetched = append(prefetched, len(h)) },
		func(h [][2]uint64) { probed = append(probed, len(h)) })
	// Each batch is prefetched before the previous one is probed.
	fmt.Println(prefetched, probed)
	lo, hi := batch.Sum(keys[0], 0)
	lo2, hi2 := batch.Sum([]byte(keys[0]), 0)
	fmt.Println(lo == lo2 && hi == hi2)
	// Output:
	// [64 64 22] [64 64 22]
	// true
}
