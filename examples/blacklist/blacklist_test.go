package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomkit/bloomkit/examples/internal/prebuilt"
)

// buildCLI returns the bloom command (package prebuilt).
func buildCLI(t *testing.T) string {
	t.Helper()
	return prebuilt.Bloom(t)
}

func listedDomain(i int) string { return fmt.Sprintf("disposable-%d.example", i) }
func goodDomain(i int) string   { return fmt.Sprintf("mail.company-%d.example", i) }
func writeList(t *testing.T, path string, n int) {
	var b strings.Builder
	b.WriteString("# disposable mail domains\n\n")
	for i := range n {
		b.WriteString(listedDomain(i) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBlacklistEndToEnd(t *testing.T) {
	const listed, good, p = 20_000, 100_000, 0.01
	dir := t.TempDir()
	list := filepath.Join(dir, "domains.txt")
	filter := filepath.Join(dir, "domains.bloom")
	writeList(t, list, listed)
	bin := buildCLI(t)
	if out, err := exec.Command(bin, "build", "-n", fmt.Sprint(listed), "-p", fmt.Sprint(p), "-o", filter, list).CombinedOutput(); err != nil {
		t.Fatalf("bloom build: %v\n%s", err, out)
	}
	c, err := Open(filter, list, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Entries != listed {
		t.Fatalf("%d entries loaded, want %d", c.Entries, listed)
	}
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	check := func(email string) Result {
		resp, err := http.Get(srv.URL + "/check?email=" + url.QueryEscape(email))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r Result
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Every listed domain is caught, also in upper case and as a sub-domain.
	for i := 0; i < listed; i += 7 {
		for _, e := range []string{"x@" + listedDomain(i), "X@" + strings.ToUpper(listedDomain(i)), "y@mx1." + listedDomain(i)} {
			if r := check(e); !r.Listed {
				t.Fatalf("%s not listed: %+v", e, r)
			}
		}
	}
	// No good address is ever rejected; the filter's maybes are caught.
	maybes := 0
	for i := range good {
		r, err := c.Check(fmt.Sprintf("user%d@%s", i, goodDomain(i)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Listed {
			t.Fatalf("good address rejected: %+v", r)
		}
		maybes += r.FilterMaybe
	}
	// Each good address asks the filter about two distinct domains:
	// mail.company-i.example and company-i.example.
	lookups := 2 * good
	rate := float64(maybes) / float64(lookups)
	if rate > 2*p {
		t.Errorf("filter said maybe to %d of %d good lookups (%.3f%%), configured rate %g", maybes, lookups, 100*rate, p)
	}
	st := c.Stats()
	t.Logf("good addresses: %d, exact-list reads needed: %d (%.2f%% of %d filter lookups), answered by the filter alone: %d; stats %+v",
		good, maybes, 100*rate, lookups, st.FilterOnly, st)
	if _, err := c.Check("nodomain"); err == nil {
		t.Error("an address without a domain was accepted")
	}
}

func TestFilterFromOtherListRefused(t *testing.T) {
	dir := t.TempDir()
	list, other, filter := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"), filepath.Join(dir, "a.bloom")
	writeList(t, list, 100)
	os.WriteFile(other, []byte("spam.example\nother.example\n"), 0o644)
	if out, err := exec.Command(buildCLI(t), "build", "-n", "100", "-o", filter, list).CombinedOutput(); err != nil {
		t.Fatalf("bloom build: %v\n%s", err, out)
	}
	if _, err := Open(filter, other, dir); err == nil || !strings.Contains(err.Error(), "test absent") {
		t.Errorf("a filter of another list was accepted: %v", err)
	}
}

func TestSortedListContains(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "l.txt"), filepath.Join(dir, "l.sorted")
	var entries []string
	for i := range 5000 {
		entries = append(entries, fmt.Sprintf("d%07d.example", i*3))
	}
	os.WriteFile(src, []byte(strings.Join(entries, "\n")+"\n"), 0o644)
	all := allFilter{}
	if _, err := buildSortedList(src, dst, all); err != nil {
		t.Fatal(err)
	}
	l, err := openSortedList(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 15000 {
		d := fmt.Sprintf("d%07d.example", i)
		got, err := l.Contains(d)
		if err != nil {
			t.Fatal(err)
		}
		if want := i%3 == 0; got != want {
			t.Fatalf("Contains(%s) = %v, want %v", d, got, want)
		}
	}
	for _, d := range []string{"", "a", "zzzz", "d0000000.exampl", "d0014997.example0"} {
		if ok, _ := l.Contains(d); ok {
			t.Errorf("Contains(%q) = true", d)
		}
	}
}

type allFilter struct{}

func (allFilter) TestString(string) bool { return true }

// TestCommentsAreNotKeys: the list's # comments are not domains. A filter
// built from the raw file (comments as keys, as a plain "bloom build
// domains.txt" does) is refused; one built as the README says is accepted.
func TestCommentsAreNotKeys(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "domains.txt")
	os.WriteFile(list, []byte("# disposable\nmailinator.com\n\n# spam\nbad.example\n"), 0o644)
	raw, clean := filepath.Join(dir, "raw.bloom"), filepath.Join(dir, "clean.bloom")
	if out, err := exec.Command(buildCLI(t), "build", "-n", "100", "-o", raw, list).CombinedOutput(); err != nil {
		t.Fatalf("bloom build: %v\n%s", err, out)
	}
	if _, err := Open(raw, list, dir); err == nil || !strings.Contains(err.Error(), "comment lines") {
		t.Errorf("a filter holding the comments was accepted: %v", err)
	}
	cmd := exec.Command("bash", "-c", "grep -v -e '^#' -e '^$' domains.txt | "+buildCLI(t)+" build -n 100 -o clean.bloom")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README's build: %v\n%s", err, out)
	}
	c, err := Open(clean, list, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Entries != 2 {
		t.Errorf("%d entries, want 2", c.Entries)
	}
}
