package guava

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// guavaJar finds Guava's jar: $BLOOMKIT_GUAVA_JAR, or Debian's
// libguava-java. Without it (or without javac and java) the test skips,
// unless BLOOMKIT_REQUIRE_JAVA=1 (set by .ci/run) makes it fail.
func guavaJar(t *testing.T) string {
	t.Helper()
	jar := os.Getenv("BLOOMKIT_GUAVA_JAR")
	if jar == "" {
		jar = "/usr/share/java/guava.jar"
	}
	missing := ""
	if _, err := os.Stat(jar); err != nil {
		missing = "Guava's jar (" + jar + "; apt-get install libguava-java)"
	}
	for _, tool := range []string{"javac", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = tool + " (apt-get install default-jdk-headless)"
		}
	}
	if missing != "" {
		if os.Getenv("BLOOMKIT_REQUIRE_JAVA") == "1" {
			t.Fatalf("BLOOMKIT_REQUIRE_JAVA=1 but %s is missing", missing)
		}
		t.Skipf("skipping the interop test with the real Guava: %s is missing (make deps installs it)", missing)
	}
	return jar
}

// interopKey is key i of the test: ASCII, Cyrillic, emoji and long keys,
// so that UTF-8 encoding and every MurmurHash3 tail length are exercised.
func interopKey(i int) string {
	switch i % 5 {
	case 0:
		return fmt.Sprintf("k%d", i)
	case 1:
		return fmt.Sprintf("ключ-%d", i)
	case 2:
		return fmt.Sprintf("🍀 %d ☘", i)
	case 3:
		return fmt.Sprintf("https://example.com/%s/%d", strings.Repeat("p", i%37), i)
	}
	return fmt.Sprintf("user-%d@example.org", i)
}

// TestJavaGuava checks both directions against the real Guava: a filter
// Java builds from 100k keys is byte-identical to the one New builds from
// the same keys, and Java and Go give the same answer for each of the 100k
// present and 100k absent keys, on the Java-written and the Go-written
// filter, through Java's byte-array and string funnels.
func TestJavaGuava(t *testing.T) {
	jar := guavaJar(t)
	const n, p = 100_000, 0.01
	dir := t.TempDir()
	keys := make([]string, 2*n)
	for i := range keys {
		keys[i] = interopKey(i)
	}
	keysPath := filepath.Join(dir, "keys.txt")
	if err := os.WriteFile(keysPath, []byte(strings.Join(keys, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := New(n, p)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys[:n] {
		if i%2 == 0 {
			f.AddString(k)
		} else {
			f.Add([]byte(k))
		}
	}
	var goBytes bytes.Buffer
	if _, err := f.WriteTo(&goBytes); err != nil {
		t.Fatal(err)
	}
	goPath := filepath.Join(dir, "go.bin")
	if err := os.WriteFile(goPath, goBytes.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	if out, err := exec.Command("javac", "-cp", jar, "-d", dir, filepath.Join("testdata", "java", "Interop.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	javaPath, answersPath := filepath.Join(dir, "java.bin"), filepath.Join(dir, "answers.txt")
	cmd := exec.Command("java", "-cp", jar+string(os.PathListSeparator)+dir, "Interop",
		keysPath, fmt.Sprint(n), fmt.Sprint(p), javaPath, goPath, answersPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("java Interop: %v\n%s", err, out)
	}

	javaBytes, err := os.ReadFile(javaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(javaBytes, goBytes.Bytes()) {
		t.Errorf("Guava's filter (%d bytes) differs from ours (%d bytes) for the same keys and sizing", len(javaBytes), goBytes.Len())
	}
	jf, err := Read(bytes.NewReader(javaBytes))
	if err != nil {
		t.Fatalf("reading Guava's filter: %v", err)
	}
	raw, err := os.ReadFile(answersPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 3 {
		t.Fatalf("java wrote %d answer lines, want 3", len(lines))
	}
	for li, line := range lines {
		if len(line) != len(keys) {
			t.Fatalf("answer line %d has %d answers for %d keys", li, len(line), len(keys))
		}
	}
	var fp, diff int
	for i, k := range keys {
		javaOwn, goOnJava := lines[0][i] == '1', jf.TestString(k)
		javaOnGoBytes, javaOnGoStrings, goOwn := lines[1][i] == '1', lines[2][i] == '1', f.Test([]byte(k))
		if javaOwn != goOnJava || javaOnGoBytes != goOwn || javaOnGoStrings != goOwn {
			if diff++; diff <= 5 {
				t.Errorf("key %d %q: Java on its filter %v, Go on it %v; Java (bytes, strings) on ours %v %v, Go %v",
					i, k, javaOwn, goOnJava, javaOnGoBytes, javaOnGoStrings, goOwn)
			}
		}
		if i < n && !(javaOwn && goOwn) {
			t.Fatalf("present key %d %q tests absent", i, k)
		}
		if i >= n && goOwn {
			fp++
		}
	}
	if diff > 0 {
		t.Errorf("%d of %d keys answered differently", diff, len(keys))
	}
	if rate := float64(fp) / n; rate > 2*p {
		t.Errorf("false-positive rate %.4f on %d absent keys, planned %v", rate, n, p)
	}
	t.Logf("%d keys: %d bytes from both, %d false positives among %d absent keys (%.3f%%)", n, len(javaBytes), fp, n, 100*float64(fp)/n)
}
