package tdigest_test

import (
	"bytes"
	"fmt"

	"github.com/bloomkit/bloomkit/tdigest"
)

func Example() {
	d, err := tdigest.New(tdigest.DefaultCompression)
	if err != nil {
		panic(err)
	}
	// Response times of 1..1000 ms.
	for ms := 1; ms <= 1000; ms++ {
		if err := d.Add(float64(ms)); err != nil {
			panic(err)
		}
	}
	fmt.Printf("p50 %.0f p99 %.0f max %.0f\n", d.Quantile(0.5), d.Quantile(0.99), d.Max())
	fmt.Printf("share ≤ 250 ms: %.2f\n", d.CDF(250))
	fmt.Println("rank of 100 ms:", d.Rank(100))
	fmt.Printf("mean of the middle 80%%: %.1f\n", d.TrimmedMean(0.1, 0.9))
	// Output:
	// p50 500 p99 990 max 1000
	// share ≤ 250 ms: 0.25
	// rank of 100 ms: 99
	// mean of the middle 80%: 500.5
}

func ExampleDigest_WriteTo() {
	d, _ := tdigest.New(50)
	for i := range 100 {
		_ = d.Add(float64(i))
	}
	var buf bytes.Buffer
	if _, err := d.WriteTo(&buf); err != nil {
		panic(err)
	}
	e, err := tdigest.Read(&buf)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Count(), e.Quantile(0.5) == d.Quantile(0.5))
	// Output: 100 true
}
