package server

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// BenchmarkLoopPipeline measures one client's request round trips through
// a connection model (the event loops, or a goroutine per connection) at
// pipeline depth 1 and 16; ns/op and allocs/op are per command, the
// client's share included (it allocates nothing per request).
func BenchmarkLoopPipeline(b *testing.B) {
	for _, gpc := range []bool{false, true} {
		model := "eventloop"
		if gpc {
			model = "goroutine"
		}
		for _, depth := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/P%d", model, depth), func(b *testing.B) {
				s := startServer(b, Config{NoPersistence: true, goroutinePerConn: gpc, Logger: quietLogger()})
				c, err := net.Dial("tcp", s.Addr())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				one := "*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nv\r\n"
				if _, err := io.WriteString(c, one); err != nil {
					b.Fatal(err)
				}
				got := make([]byte, 4)
				if _, err := io.ReadFull(c, got); err != nil || string(got) != ":1\r\n" {
					b.Fatalf("BF.ADD: %q %v", got, err)
				}
				req := []byte(strings.Repeat("*3\r\n$9\r\nBF.EXISTS\r\n$1\r\nk\r\n$1\r\nv\r\n", depth))
				want := strings.Repeat(":1\r\n", depth)
				buf := make([]byte, len(want))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i += depth {
					if _, err := c.Write(req); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, buf); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if string(buf) != want {
					b.Fatalf("replies %q", buf)
				}
			})
		}
	}
}
