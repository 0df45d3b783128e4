package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// demoSite is a generated web site full of duplicate spellings and cycles,
// for trying the crawler (-demo-site) and for its tests. Every page links
// to the next and previous page and to ten random pages, each link written
// in one of several spellings of the same URL, plus mail, javascript and
// off-site links. Odd pages also exist with a query string.
type demoSite struct {
	pages int
	base  string // http://host:port, as the links spell it
	mu    sync.Mutex
	hits  map[string]int // canonical URL -> fetches
}

func newDemoSite(pages int) *demoSite {
	return &demoSite{pages: pages, hits: map[string]int{}}
}

// canonical returns the canonical URL of page i (pages with odd numbers
// also exist with a query string).
func (s *demoSite) canonical(i int, query bool) string {
	u := s.base + fmt.Sprintf("/page/%d", i)
	if query {
		u += "?a=1&b=2"
	}
	return u
}

// spellings of a link to page i, all meaning the same URL.
func (s *demoSite) spell(r *rand.Rand, i int, query bool) string {
	host := strings.TrimPrefix(s.base, "http://")
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

// ServeHTTP serves the pages and counts the fetches of each URL.
func (s *demoSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
