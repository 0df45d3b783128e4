package doctest

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
)

func TestRunFindsFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	src := fmt.Sprintf("<!-- doctest setup\necho 1,2 > in.csv\n-->\n"+
		"```sh\ncd sub\nfalse || true              # a negative answer, shown as one\nbash -c 'exit 3'\ncat ../in.csv > out.txt\necho 'prog: note: sized for 10 lines' >&2\necho 'a warning: on stdout is output' | cat\n```\n"+
		"```console\n$ cat sub/out.txt\n1,2\n$ echo hi\nho\n```\n"+
		"```\nbloom calc -n N  (a synopsis: not run)\n```\n"+
		"<!-- doctest skip: needs the moon -->\n```sh\nexit 9\n```\n"+
		"```sh\npython3 -m http.server %d --bind 127.0.0.1 &   # 127.0.0.1:%d\ncurl -sf http://127.0.0.1:%d/ > /dev/null\n```\n", port, port, port)
	d := Parse(src)
	if len(d.Skips) != 1 || !strings.Contains(d.Skips[0], "needs the moon") {
		t.Errorf("skips: %q", d.Skips)
	}
	dir := t.TempDir()
	os.Mkdir(dir+"/sub", 0o755)
	r := &Runner{Dir: dir, Env: os.Environ()}
	fails, err := r.Run(d)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fails {
		got = append(got, f.Text)
	}
	want := []string{"bash -c 'exit 3'", "echo 'prog: note: sized for 10 lines' >&2", "echo hi"}
	if _, err := os.Stat("/usr/bin/curl"); err != nil || !hasPython() {
		t.Logf("no curl or python3: the server line is not checked")
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("failures %q, want %q\n%v", got, want, fails)
	}
}

func hasPython() bool {
	_, err := os.Stat("/usr/bin/python3")
	return err == nil
}

// A document's temporary directories (`mktemp -d`) are made in the
// runner's directory, and so go with it.
func TestTempFilesStayInDir(t *testing.T) {
	dir := t.TempDir()
	d := Parse("```sh\nmktemp -d > made.txt\n```\n")
	if fails, err := (&Runner{Dir: dir, Env: os.Environ()}).Run(d); err != nil || len(fails) > 0 {
		t.Fatalf("run: %v %v", err, fails)
	}
	made, err := os.ReadFile(dir + "/made.txt")
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.TrimSpace(string(made)); !strings.HasPrefix(p, dir+"/") {
		t.Errorf("mktemp -d made %s, outside the runner's directory %s", p, dir)
	}
}
