package acl_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/server/internal/acl"
)

func Example() {
	cat := acl.NewCatalog([]string{"read", "write", "bloom"})
	exists := cat.Add("bf.exists", []string{"read", "bloom"})
	add := cat.Add("bf.add", []string{"write", "bloom"})

	users := acl.NewUsers(cat)
	if err := users.SetUser("reader", []string{"on", ">pw", "~filters:*", "+@read"}); err != nil {
		fmt.Println(err)
	}
	u := users.Authenticate("reader", "pw")
	r := u.Rules()
	fmt.Println(r.CanRun(exists, nil), r.CanRun(add, nil))
	fmt.Println(r.CanKey([]byte("filters:seen"), acl.Read), r.CanKey([]byte("other"), acl.Read))
	fmt.Println(users.List()[1][:40])
	// Output:
	// true false
	// true false
	// user reader on sanitize-payload #30c952f
}
