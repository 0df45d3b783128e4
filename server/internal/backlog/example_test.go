package backlog_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/server/internal/backlog"
)

// A replica reads the stream from its offset; the buffer keeps the
// history a reconnecting replica may ask for.
func Example() {
	b := backlog.New(100, 1<<20)
	b.Append([]byte("*1\r\n$4\r\nPING\r\n"))
	r, ok := b.NewReader(100, backlog.Limits{Hard: 256 << 20})
	fmt.Println(ok, b.First(), b.End())
	p := make([]byte, 64)
	n, _ := r.Read(p)
	fmt.Printf("%q %d\n", p[:n], r.Pos())
	_, ok = b.NewReader(99, backlog.Limits{})
	fmt.Println(ok)
	// Output:
	// true 100 114
	// "*1\r\n$4\r\nPING\r\n" 114
	// false
}
