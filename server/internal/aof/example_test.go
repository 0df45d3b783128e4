package aof_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// Two records as the server logs them, read back.
func Example() {
	b := aof.EncodeRecord(nil, [][]byte{[]byte("BF.ADD"), []byte("k"), []byte("v")})
	b = aof.EncodeTransaction(b, [][][]byte{{[]byte("DEL"), []byte("a")}, {[]byte("DEL"), []byte("b")}})
	aof.DecodeRecords(b, func(cmds [][][]byte, err error) {
		fmt.Printf("%q %v\n", cmds, err)
	})
	// Output:
	// [["BF.ADD" "k" "v"]] <nil>
	// [["DEL" "a"] ["DEL" "b"]] <nil>
}
