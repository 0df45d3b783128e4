package main

import (
	"bufio"
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/examples/internal/prebuilt"
	"github.com/bloomkit/bloomkit/internal/redistest"
)

// site is the demo site (demosite.go) on a test server.
type site struct {
	*demoSite
	server *httptest.Server
}

func newSite(t *testing.T, pages int) *site {
	d := newDemoSite(pages)
	srv := httptest.NewUnstartedServer(d)
	d.base = "http://" + srv.Listener.Addr().String() // before Start: the handler reads it
	srv.Start()
	t.Cleanup(srv.Close)
	return &site{d, srv}
}

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
	const pages = 1000
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
	bin := prebuilt.Example(t, "crawler")
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
	// check above fails if any page was fetched twice: without a shared
	// frontier both processes would fetch every page. One process may
	// still fetch nothing when the other has already seen its start page
	// by the time it starts (a fast machine): that is the frontier shared.
	if fetchedBy[0] == 0 || fetchedBy[1] == 0 {
		t.Logf("one crawler did all the work (%v): the other found its start page already seen", fetchedBy)
	}
}
