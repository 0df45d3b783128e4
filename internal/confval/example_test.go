package confval_test

import (
	"fmt"
	"time"

	"github.com/bloomkit/bloomkit/internal/confval"
)

func Example() {
	n, _ := confval.ParseSize("4gb")
	d, _ := confval.ParseDuration("300", time.Second)
	b, _ := confval.ParseBool("no")
	fmt.Println(n, confval.FormatSize(n), d, b)
	// Output: 4294967296 4.0 GiB 5m0s false
}
