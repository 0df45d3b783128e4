package format_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/internal/format"
)

// A header is marshalled with its own CRC and parsed back; a damaged byte
// is caught before anything is allocated for the payload.
func Example() {
	h := format.Header{Type: format.TypeBlocked, Seed: 7, M: 1 << 20, K: 7, N: 100000, P: 0.01, PayloadLen: 1 << 17}
	b := h.Marshal()
	back, err := format.ParseHeader(b)
	fmt.Println(len(b), format.TypeName(back.Type), back.M, back.K, err)
	b[30] ^= 1
	_, err = format.ParseHeader(b)
	fmt.Println(err != nil)
	// Output:
	// 80 blocked 1048576 7 <nil>
	// true
}
