package resp_test

import (
	"fmt"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// A pipeline of two requests, one RESP array and one inline command, read
// and answered in RESP2.
func Example() {
	in := "*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nv\r\nBF.EXISTS k v\r\n"
	rd := resp.NewReader(strings.NewReader(in), resp.PreAuthLimits)
	var w resp.Writer
	for {
		args, err := rd.Next()
		if err != nil {
			break
		}
		if args == nil {
			if rd.Fill() != nil {
				break
			}
			continue
		}
		fmt.Printf("%q\n", args)
		w.Next()
		w.Bool(true)
	}
	fmt.Printf("%q\n", w.Pending())
	// Output:
	// ["BF.ADD" "k" "v"]
	// ["BF.EXISTS" "k" "v"]
	// ":1\r\n:1\r\n"
}
