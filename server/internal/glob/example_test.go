package glob_test

import (
	"fmt"

	"github.com/bloomkit/bloomkit/server/internal/glob"
)

func ExampleMatch() {
	fmt.Println(glob.Match("user:*:name", "user:42:name"))
	fmt.Println(glob.Match("h[ae]llo", "hillo"))
	// Output:
	// true
	// false
}
