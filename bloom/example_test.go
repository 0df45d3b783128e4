package bloom_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/bloomkit/bloomkit/bloom"
)

func Example() {
	// A filter for 1 million URLs at a 1% false-positive rate.
	seen, err := bloom.New(1_000_000, 0.01)
	if err != nil {
		panic(err)
	}
	for _, url := range []string{"https://a.example/", "https://b.example/"} {
		if seen.TestAndAddString(url) {
			fmt.Println("already crawled", url)
			continue
		}
		fmt.Println("crawl", url)
	}
	fmt.Println(seen.TestString("https://a.example/"), seen.TestString("https://c.example/"))
	// Output:
	// crawl https://a.example/
	// crawl https://b.example/
	// true false
}

func ExampleEstimate() {
	p := bloom.Estimate(100_000_000, 0.01)
	fmt.Printf("classic: %d bits (%.1f MiB), k = %d\n", p.M, float64(p.M)/8/(1<<20), p.K)
	b := bloom.EstimateBlocked(100_000_000, 0.01)
	fmt.Printf("blocked: %d bits (%.1f MiB), k = %d\n", b.M, float64(b.M)/8/(1<<20), b.K)
	fmt.Printf("rate at twice the items: %.3f\n", bloom.FalsePositiveRate(p.M, 200_000_000, p.K))
	// Output:
	// classic: 958505838 bits (114.3 MiB), k = 7
	// blocked: 991799296 bits (118.2 MiB), k = 6
	// rate at twice the items: 0.157
}

func ExampleNewBlocked() {
	f, err := bloom.NewBlocked(10_000, 0.001)
	if err != nil {
		panic(err)
	}
	bloom.AddMany(f, []string{"alice@example.com", "bob@example.com"})
	fmt.Println(bloom.TestMany(f, []string{"bob@example.com", "eve@example.com"}, nil))
	// Output: [true false]
}

func ExampleTestMany() {
	// One call per batch, for either layout and []byte or string keys: the
	// batch's cache misses overlap. dst[:0] of a reused slice allocates
	// nothing.
	f, err := bloom.New(1_000_000, 0.01)
	if err != nil {
		panic(err)
	}
	bloom.AddMany(f, [][]byte{[]byte("GET /a"), []byte("GET /b")})
	dst := make([]bool, 0, 1024)
	dst = bloom.TestMany(f, []string{"GET /a", "GET /c", "GET /b"}, dst[:0])
	fmt.Println(dst)
	// Output: [true false true]
}

func ExampleNewFromParams() {
	// A random secret seed makes the bits a key sets unpredictable, against
	// crafted keys; it is saved with the filter.
	p := bloom.Estimate(1000, 0.01)
	p.Seed = bloom.RandomSeed()
	f, err := bloom.NewFromParams(p)
	if err != nil {
		panic(err)
	}
	f.AddString("x")
	fmt.Println(f.TestString("x"))
	// Output: true
}

func ExampleFilter_WriteTo() {
	f, _ := bloom.New(1000, 0.01)
	f.AddString("spam@example.com")

	var file bytes.Buffer // an *os.File works the same way
	if _, err := f.WriteTo(&file); err != nil {
		panic(err)
	}
	var g bloom.Filter
	if _, err := g.ReadFrom(&file); err != nil {
		panic(err)
	}
	fmt.Println(g.TestString("spam@example.com"), g.Params() == f.Params())
	// Output: true true
}

func ExampleFilter_Union() {
	a, _ := bloom.New(1000, 0.01)
	b, _ := bloom.New(1000, 0.01)
	a.AddString("from a")
	b.AddString("from b")
	if err := a.Union(b); err != nil {
		panic(err)
	}
	fmt.Println(a.TestString("from a"), a.TestString("from b"))

	c, _ := bloom.New(5000, 0.01)
	fmt.Println(a.Union(c))
	// Output:
	// true true
	// bloom: incompatible filters: m = 9586 and 47926 bits
}

func ExampleFilter_Sync() {
	f, _ := bloom.New(100_000, 0.01)
	s := f.Sync() // every goroutine adds and tests through the view
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				s.AddString(fmt.Sprintf("worker %d item %d", w, i))
			}
		}()
	}
	wg.Wait()
	fmt.Println(s.TestString("worker 3 item 999"), f.Stats().ApproxCount)
	// Output: true 4001
}

func ExampleFilter_Stats() {
	f, _ := bloom.New(10_000, 0.01)
	for i := range 5000 {
		f.AddString(fmt.Sprint(i))
	}
	st := f.Stats()
	fmt.Printf("about %d items, %.0f%% of bits set, rate now %.4f\n", st.ApproxCount, 100*st.FillRatio, st.EstimatedFPR)
	// Output: about 4999 items, 31% of bits set, rate now 0.0003
}

// A filter is a field of a struct saved with encoding/json (or gob): it
// is written as its file, in base64.
func ExampleFilter_MarshalJSON() {
	type profile struct {
		User string
		Seen *bloom.Filter
	}
	f, _ := bloom.New(1000, 0.01)
	f.AddString("article-17")
	data, err := json.Marshal(profile{User: "ann", Seen: f})
	if err != nil {
		panic(err)
	}
	var back profile
	if err := json.Unmarshal(data, &back); err != nil {
		panic(err)
	}
	fmt.Println(back.User, back.Seen.TestString("article-17"), back.Seen.TestString("article-18"))
	// Output: ann true false
}

func ExampleSplitBlock() {
	// A Bloom filter a Parquet reader can use for a BYTE_ARRAY column: the
	// values' bytes are the keys (an INT64 column's keys are its values'
	// 8 little-endian bytes). NewSplitBlock sizes it for the rate.
	f, err := bloom.NewSplitBlock(1000, 0.01)
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"alice@example.com", "bob@example.com"} {
		f.AddString(v)
	}
	// What a column chunk's bloom_filter_offset points at: the Thrift
	// BloomFilterHeader, then the bitset. n is its bloom_filter_length.
	var data bytes.Buffer
	n, err := f.WriteParquet(&data)
	if err != nil {
		panic(err)
	}
	fmt.Println(n, f.Len())
	// Read back, as from a Parquet file any engine wrote.
	g, err := bloom.ReadParquet(&data)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.TestString("bob@example.com"), g.TestString("eve@example.com"))
	// Engines hold a value's XXH64; TestHash takes it.
	fmt.Println(g.TestHash(bloom.SplitBlockHashString("alice@example.com")))
	// Output:
	// 2064 2048
	// true false
	// true
}

// A hash made for one filter works with it, and a filter of another hash
// or seed refuses it: CheckHash says so as an error, where AddHash and
// TestHash would panic rather than answer for bits the key never set.
func ExampleParams_HashKey() {
	f, _ := bloom.NewBlocked(1000, 0.01) // hash id 4: XXH3-64, seed 0
	h := f.Params().HashKeyString("alice@example.com")
	f.AddHash(h)
	fmt.Println(f.TestString("alice@example.com"), f.TestHash(h))

	g, _ := bloom.NewBlockedFromParams(bloom.Params{M: 8192, K: 7, Seed: 7})
	err := g.Params().CheckHash(h)
	fmt.Println(errors.Is(err, bloom.ErrHashMismatch))
	// Output:
	// true true
	// true
}
