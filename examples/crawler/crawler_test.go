package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/internal/redistest"
)

// site is a generated web site full of duplicate spellings and cycles.
// Every page links to the next and previous page and to ten random pages,
// each link written in one of several spellings of the same URL.
type site struct {
	pages  int
	server *httptest.Server
	mu     sync.Mutex
	hits   map[string]int // canonical URL -> fetches
}

func newSite(t *testing.T, pages int) *site {
	s := &site{pages: pages, hits: map[string]int{}}
	s.server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.server.Start() // after s.server is set: the handler reads it
	t.Cleanup(s.server.Close)
	return s
}

// canonical returns the canonical URL of page i (pages with odd numbers
// also exist with a query string).
func (s *site) canonical(i int, query bool) string {
	u := s.server.URL + fmt.Sprintf("/page/%d", i)
	if query {
		u += "?a=1&b=2"
	}
	return u
}

// spellings of a link to page i, all meaning the same URL.
func (s *site) spell(r *rand.Rand, i int, query bool) string {
	host := strings.TrimPrefix(s.server.URL, "http://")
	q := ""
	if query {
		q = []string{"?a=1&b=2", "?b=2&a=1"}[r.IntN(2)]
	}
	switch r.IntN(6) {
	case 0:
		return fmt.Sprintf("/page/%d%s", i, q)
	case 1:
		return fmt.Sprintf("/page/%d/%s", i, q)
	case 2:
		return fmt.Sprintf("/page/%d%s#section-%d", i, q, r.IntN(5))
	case 3:
		return fmt.Sprintf("HTTP://%s/page/%d%s", strings.ToUpper(host), i, q)
	case 4:
		return fmt.Sprintf("/other/../page/./%d%s", i, q)
	default:
		return fmt.Sprintf("http://%s/page/%d%s", host, i, q)
	}
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	canon, _ := normalize(&url.URL{Scheme: "http", Host: r.Host}, r.URL.String())
	s.mu.Lock()
	s.hits[canon]++
	s.mu.Unlock()
	var i int
	if _, err := fmt.Sscanf(r.URL.Path, "/page/%d", &i); err != nil || i < 0 || i >= s.pages {
		http.NotFound(w, r)
		return
	}
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	fmt.Fprintf(w, "<html><body><h1>page %d</h1>\n", i)
	link := func(j int) {
		j = (j + s.pages) % s.pages
		fmt.Fprintf(w, "<a href=%q>page %d</a>\n", s.spell(rng, j, false), j)
		if j%2 == 1 && rng.IntN(3) == 0 {
			fmt.Fprintf(w, "<a href=%q>page %d with a query</a>\n", s.spell(rng, j, true), j)
		}
	}
	link(i + 1)
	link(i - 1)
	for range 10 {
		link(rng.IntN(s.pages))
	}
	fmt.Fprint(w, `<a href="mailto:someone@example.com">mail</a> <a href="javascript:void(0)">js</a>`)
	fmt.Fprint(w, `<a href="https://elsewhere.example/">off-site</a></body></html>`)
}

// check compares what the site served with what it should have.
func (s *site) check(t *testing.T, want map[string]bool, p float64) (missing int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, n := range s.hits {
		if n > 1 {
			t.Errorf("%s fetched %d times", u, n)
		}
	}
	for u := range want {
		if s.hits[u] == 0 {
			missing++
		}
	}
	// Every URL a false positive made the crawler skip is missing, and
	// pages reachable only through it. With >= 12 links into each page, the
	// second is negligible: allow 3x the expected false positives plus slack.
	limit := int(3*p*float64(len(want))) + 5
	if missing > limit {
		t.Errorf("%d of %d pages never fetched; the filter's rate %g allows about %d", missing, len(want), p, limit)
	}
	return missing
}

// exactSeen is a reference frontier: an exact set, for computing what a
// perfect crawl fetches.
type exactSeen struct {
	mu sync.Mutex
	m  map[string]bool
}

func (e *exactSeen) TestAndAdd(_ context.Context, u string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m[u] {
		return true, nil
	}
	e.m[u] = true
	return false, nil
}

func crawl(t *testing.T, s *site, f Frontier) Stats {
	t.Helper()
	c := &Crawler{Frontier: f, Workers: 8, Allowed: map[string]bool{strings.TrimPrefix(s.server.URL, "http://"): true}}
	st, err := c.Run(context.Background(), s.server.URL+"/page/0")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestCrawlEveryPageOnce(t *testing.T) {
	const pages = 3000
	// A crawl with an exact set finds the true set of canonical URLs.
	ref := newSite(t, pages)
	crawl(t, ref, &exactSeen{m: map[string]bool{}})
	want := map[string]bool{}
	for u, n := range ref.hits {
		if n != 1 {
			t.Fatalf("reference crawl fetched %s %d times: normalisation is broken", u, n)
		}
		want[strings.Replace(u, ref.server.URL, "", 1)] = true
	}
	if len(want) < pages {
		t.Fatalf("reference crawl reached %d URLs, the site has %d pages", len(want), pages)
	}

	for _, p := range []float64{0.01, 0.0001} {
		s := newSite(t, pages)
		f, err := bloom.NewBlocked(uint64(len(want)), p)
		if err != nil {
			t.Fatal(err)
		}
		st := crawl(t, s, localFrontier{new(sync.Mutex), f})
		w := map[string]bool{}
		for u := range want {
			w[s.server.URL+u] = true
		}
		missing := s.check(t, w, p)
		t.Logf("p=%g: %d URLs, fetched %d, %d skipped by a false positive, %d duplicate links dropped",
			p, len(w), st.Fetched, missing, st.Skipped)
	}
}

func TestNormalize(t *testing.T) {
	base, _ := url.Parse("http://Example.com:80/dir/page.html")
	cases := map[string]string{
		"":                                  "http://example.com/dir/page.html",
		"other":                             "http://example.com/dir/other",
		"/a/b/":                             "http://example.com/a/b",
		"/a/./b/../c#frag":                  "http://example.com/a/c",
		"HTTPS://EXAMPLE.com:443/x?b=2&a=1": "https://example.com/x?a=1&b=2",
		"http://example.com:8080/":          "http://example.com:8080/",
		"https://example.com":               "https://example.com/",
		"?z=1&y=2&y=1":                      "http://example.com/dir/page.html?y=1&y=2&z=1",
	}
	for in, want := range cases {
		got, ok := normalize(base, in)
		if !ok || got != want {
			t.Errorf("normalize(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"mailto:a@b.c", "javascript:void(0)", "ftp://x/", "http://[::1", "data:text/plain,hi"} {
		if got, ok := normalize(base, bad); ok {
			t.Errorf("normalize(%q) = %q, want it refused", bad, got)
		}
	}
}

// TestTwoProcessesShareRedis runs two crawler processes on one Redis-backed
// seen-set: between them every page is fetched once.
func TestTwoProcessesShareRedis(t *testing.T) {
	rs := redistest.Start(t)
	bin := filepath.Join(t.TempDir(), "crawler")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const pages = 2000
	s := newSite(t, pages)
	var wg sync.WaitGroup
	fetchedBy := make([]int, 2)
	for i, start := range []string{"/page/0", "/page/1000"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "-start", s.server.URL+start, "-shared", "redis://"+rs.Addr+"/0",
				"-n", "10000", "-p", "0.0001", "-workers", "4")
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Error(err)
				return
			}
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				fetchedBy[i]++
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("crawler %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	want := map[string]bool{}
	s.mu.Lock()
	for i := range pages {
		want[s.canonical(i, false)] = true
	}
	s.mu.Unlock()
	missing := s.check(t, want, 0.0001)
	t.Logf("two processes fetched %d and %d pages; %d of %d pages missing", fetchedBy[0], fetchedBy[1], missing, pages)
	if fetchedBy[0] == 0 || fetchedBy[1] == 0 {
		t.Errorf("one crawler did all the work (%v): the shared frontier was not shared", fetchedBy)
	}
}
