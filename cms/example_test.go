package cms_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/cms"
)

func Example() {
	// An overestimate of at most 0.1% of the total with probability 99.9%.
	s, err := cms.NewWithEstimates(0.001, 0.001)
	if err != nil {
		panic(err)
	}
	for _, page := range []string{"/", "/about", "/", "/pricing", "/"} {
		s.IncrByString(page, 1)
	}
	s.IncrByString("/about", 10)
	fmt.Println(s.Width(), s.Depth(), s.Count())
	fmt.Println(s.QueryString("/"), s.QueryString("/about"), s.QueryString("/missing"))
	// Output:
	// 2000 10 15
	// 3 11 0
}
