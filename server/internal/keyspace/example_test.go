package keyspace_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/server/internal/keyspace"
)

// A keyspace with a memory limit: a value is stored only when it fits,
// and the accounting follows it.
func Example() {
	db := keyspace.New(1<<20, nil)
	db.Lock()
	defer db.Unlock()
	val := []byte("hello")
	if db.RoomFor(uint64(len(val))) {
		db.PutString([]byte("greeting"), val, 0)
	}
	e := db.Get("greeting")
	fmt.Println(db.Len(), e.Kind, string(e.StrBytes()), db.Used() > 0)
	fmt.Println(db.RoomFor(2 << 20))
	// Output:
	// 1 string hello true
	// false
}
