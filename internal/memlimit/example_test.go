package memlimit_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/internal/memlimit"
)

func Example() {
	limit, source, ok := memlimit.System{}.Limit()
	if ok {
		_ = fmt.Sprintf("may use %d bytes (%s)", limit, source)
	}
	fmt.Println("done")
	// Output: done
}
