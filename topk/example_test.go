package topk_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/topk"
)

func Example() {
	// The 2 heaviest items, over 3 rows of 50 buckets.
	t, err := topk.New(2, 50, 3, topk.DefaultDecay)
	if err != nil {
		panic(err)
	}
	for _, page := range []string{"/", "/about", "/", "/pricing", "/", "/about"} {
		t.AddString(page)
	}
	for _, it := range t.List() {
		fmt.Printf("%s %d\n", it.Item, it.Count)
	}
	fmt.Println(t.QueryString("/pricing"), t.CountString("/pricing"))
	// Output:
	// / 3
	// /about 2
	// false 1
}
