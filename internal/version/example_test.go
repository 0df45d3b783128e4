package version_test

import (
	"fmt"
	"strings"

	"github.com/bloomkit/bloomkit/internal/version"
)

// Get tells which build is running; a test binary has no release tag, so
// its version is "devel" unless the build record has one.
func Example() {
	v := version.Get()
	fmt.Println(v.Version != "", strings.HasPrefix(v.GoVersion, "go"))
	// Output: true true
}
