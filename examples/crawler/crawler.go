package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"golang.org/x/net/html"
)

// Frontier remembers which URLs were already scheduled. TestAndAdd reports
// whether url was (probably) seen before and records it. A Bloom filter
// makes it approximate: a false positive makes the crawler skip a page it
// never fetched, at the filter's false-positive rate, and never makes it
// fetch a page twice.
type Frontier interface {
	TestAndAdd(ctx context.Context, url string) (bool, error)
}

// Crawler fetches every page reachable from its start URLs on the allowed
// hosts, each page once.
type Crawler struct {
	Client   *http.Client
	Frontier Frontier
	Workers  int
	// Allowed hosts (host[:port] as in normalized URLs); empty allows all.
	Allowed map[string]bool
	// MaxPages stops the crawl after this many fetches (0: no limit).
	MaxPages int64
	// OnFetch, if set, is called after each fetch with the URL and status.
	OnFetch func(url string, status int)

	fetched atomic.Int64
	skipped atomic.Int64 // links dropped because the frontier had them
}

// Stats is what a crawl did.
type Stats struct {
	Fetched int64 // pages fetched
	Skipped int64 // links not followed because the frontier said "seen"
}

// Run crawls from the start URLs until no new links remain or ctx ends.
func (c *Crawler) Run(ctx context.Context, start ...string) (Stats, error) {
	q := newQueue()
	var firstErr error
	var errOnce sync.Once
	fail := func(err error) { errOnce.Do(func() { firstErr = err }) }
	for _, s := range start {
		u, ok := normalize(&url.URL{}, s)
		if !ok {
			return Stats{}, fmt.Errorf("crawler: start URL %q is not an http(s) URL", s)
		}
		seen, err := c.Frontier.TestAndAdd(ctx, u)
		if err != nil {
			return Stats{}, fmt.Errorf("crawler: frontier: %w", err)
		}
		if seen { // another crawler sharing the frontier has it
			c.skipped.Add(1)
			continue
		}
		q.push(u)
	}
	var wg sync.WaitGroup
	for range max(c.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				u, ok := q.pop()
				if !ok {
					return
				}
				links, err := c.visit(ctx, u)
				if err != nil {
					fail(err)
				}
				for _, l := range links {
					seen, err := c.Frontier.TestAndAdd(ctx, l)
					if err != nil {
						fail(fmt.Errorf("crawler: frontier: %w", err))
						continue
					}
					if seen {
						c.skipped.Add(1)
						continue
					}
					q.push(l)
				}
				q.done()
			}
		}()
	}
	wg.Wait()
	return Stats{Fetched: c.fetched.Load(), Skipped: c.skipped.Load()}, firstErr
}

// visit fetches one page and returns the normalized links on it that the
// crawler may follow.
func (c *Crawler) visit(ctx context.Context, u string) ([]string, error) {
	if c.MaxPages > 0 && c.fetched.Load() >= c.MaxPages {
		return nil, nil
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("crawler: %s: %w", u, err)
	}
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("crawler: fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	c.fetched.Add(1)
	if c.OnFetch != nil {
		c.OnFetch(u, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, nil
	}
	base := resp.Request.URL
	var links []string
	z := html.NewTokenizer(io.LimitReader(resp.Body, 8<<20))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return links, nil
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "a" || !hasAttr {
				continue
			}
			for {
				k, v, more := z.TagAttr()
				if string(k) == "href" {
					if l, ok := normalize(base, string(v)); ok && c.allowed(l) {
						links = append(links, l)
					}
				}
				if !more {
					break
				}
			}
		}
	}
}

func (c *Crawler) allowed(u string) bool {
	if len(c.Allowed) == 0 {
		return true
	}
	p, err := url.Parse(u)
	return err == nil && c.Allowed[p.Host]
}

// queue is an unbounded work queue that knows when the crawl is over: when
// it is empty and no worker is still processing a page (which could add
// more).
type queue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	items   []string
	working int
}

func newQueue() *queue {
	q := &queue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) push(u string) {
	q.mu.Lock()
	q.items = append(q.items, u)
	q.mu.Unlock()
	q.cond.Signal()
}

// pop returns the next URL, waiting while others may still add some; ok is
// false when the crawl is over. Every successful pop must be followed by
// done.
func (q *queue) pop() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 {
		if q.working == 0 {
			q.cond.Broadcast()
			return "", false
		}
		q.cond.Wait()
	}
	u := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	q.working++
	return u, true
}

func (q *queue) done() {
	q.mu.Lock()
	q.working--
	q.mu.Unlock()
	q.cond.Broadcast()
}
