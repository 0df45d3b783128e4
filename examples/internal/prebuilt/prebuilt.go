// Package prebuilt gives the examples' tests the programs they run: bloom
// (cmd/bloom) and the examples themselves. make test builds them once into
// the directory $BLOOMKIT_TEST_BIN, which every test then shares; when that
// is unset (go test run by hand) a test builds what it needs.
package prebuilt

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// EnvDir names the environment variable holding the directory of prebuilt
// programs.
const EnvDir = "BLOOMKIT_TEST_BIN"

// Bloom returns the path of the bloom command.
func Bloom(t testing.TB) string {
	t.Helper()
	return path(t, "bloom", func(dir, out string) []string {
		// cmd/bloom is in the repository's module, beside examples/.
		return []string{"build", "-C", filepath.Dir(dir), "-o", out, "./cmd/bloom"}
	})
}

// Example returns the path of the example program name (its directory
// under examples/).
func Example(t testing.TB, name string) string {
	t.Helper()
	return path(t, name, func(dir, out string) []string {
		return []string{"build", "-C", dir, "-o", out, "./" + name}
	})
}

// Dir returns the directory of prebuilt programs, or "" when there is none.
func Dir() string { return os.Getenv(EnvDir) }

func path(t testing.TB, name string, args func(examples, out string) []string) string {
	t.Helper()
	if dir := Dir(); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v (make testbin builds it)", EnvDir, dir, err)
		}
		return p
	}
	examples, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	out := filepath.Join(t.TempDir(), name)
	a := args(filepath.Dir(strings.TrimSpace(string(examples))), out)
	if b, err := exec.Command("go", a...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(a, " "), err, b)
	}
	return out
}
