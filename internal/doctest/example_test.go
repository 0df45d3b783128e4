package doctest_test

import (
	"fmt"
	"os"

	"github.com/bloomkit/bloomkit/internal/doctest"
)

// Parse finds the runnable blocks of a document; a Runner runs them and
// reports every command that did not do what the document says.
func Example() {
	doc := doctest.Parse("Greet:\n\n```console\n$ echo hello\nhello\n```\n\n```sh\ntrue\n```\n")
	for _, b := range doc.Blocks {
		fmt.Println("block at line", b.Line, "script", len(b.Script), "console", len(b.Console))
	}
	dir, _ := os.MkdirTemp("", "doctest-example-")
	defer os.RemoveAll(dir)
	fails, err := (&doctest.Runner{Dir: dir, Env: os.Environ()}).Run(doc)
	fmt.Println(len(fails), "failures", err)
	// Output:
	// block at line 3 script 0 console 1
	// block at line 8 script 1 console 0
	// 0 failures <nil>
}
