package bloomproc_test

import (
	"fmt"
	"time"

	"github.com/bloomkit/bloomkit/bench/internal/bloomproc"
)

// ClientOptions gives every failure to the caller: no retries, one
// connection, the given timeouts.
func ExampleClientOptions() {
	o := bloomproc.ClientOptions("127.0.0.1:6479", 2*time.Second)
	fmt.Println(o.Addr, o.MaxRetries, o.PoolSize, o.ReadTimeout)
	// Output: 127.0.0.1:6479 -1 1 2s
}
