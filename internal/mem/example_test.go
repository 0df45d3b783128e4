package mem_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/internal/mem"
)

// Words is make([]uint64, n) for filter arrays: large ones are placed on
// huge pages where the kernel allows it.
func Example() {
	w := mem.Words(1 << 20)
	fmt.Println(len(w), w[0], w[len(w)-1])
	// Output: 1048576 0 0
}
