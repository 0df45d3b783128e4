// Command crawler is a concurrent web crawler whose "seen URLs" set is a
// bloomkit Bloom filter: in process by default, or shared through Redis
// (package redisfilter) with -shared so several crawler processes split one
// crawl between them and never fetch a page twice.
//
//	go run ./crawler -demo-site 127.0.0.1:8080 &        # a local site to crawl
//	go run ./crawler -start http://127.0.0.1:8080/page/0
//	go run ./crawler -start http://127.0.0.1:8080/page/0 -shared redis://127.0.0.1:6379/0
//	go run ./crawler -shared redis://127.0.0.1:6379/0 -reset   # forget what the shared crawl saw
//
// It prints every fetched URL on stdout and a summary on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/examples/internal/flagx"
	"github.com/bloomkit/bloomkit/redisfilter"
	"github.com/redis/go-redis/v9"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("crawler", flag.ContinueOnError)
	var (
		start    = fs.String("start", "", "URL to start from (required); only its host is crawled unless -allow says more")
		allow    = fs.String("allow", "", "comma-separated extra hosts (host[:port]) the crawl may enter")
		workers  = fs.Int("workers", 8, "concurrent fetches")
		n        = flagx.Count(fs, "n", 1_000_000, "URLs the seen-set is sized for (1M, 1e6)")
		p        = flagx.Rate(fs, "p", 0.001, "false-positive rate of the seen-set: the fraction of new pages a crawl may skip")
		shared   = fs.String("shared", "", "redis://host:port/db: keep the seen-set in Redis, shared by every crawler given the same URL and -name")
		name     = fs.String("name", "crawler-seen", "name of the shared seen-set in Redis")
		maxPages = fs.Int64("max-pages", 0, "stop after this many fetches (0: no limit)")
		timeout  = fs.Duration("timeout", 10*time.Second, "per-request timeout")
		demo     = fs.String("demo-site", "", "serve a generated demo site on `ADDR` (127.0.0.1:8080) until interrupted, instead of crawling")
		pages    = fs.Int("pages", 3000, "pages of the -demo-site")
		reset    = fs.Bool("reset", false, "empty the -shared seen-set (for every crawler using it) and exit")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *demo != "" {
		return serveDemo(*demo, *pages)
	}
	if *reset {
		if *shared == "" {
			fmt.Fprintln(os.Stderr, "crawler: -reset needs -shared: an in-process seen-set is new at every run")
			return 2
		}
		f, closeF, err := openFrontier(context.Background(), *shared, *name, *n, *p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "crawler: %v\n", err)
			return 2
		}
		defer closeF()
		if err := f.(redisFrontier).f.Reset(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "crawler: reset: %v\n", err)
			return 2
		}
		fmt.Fprintf(os.Stderr, "crawler: %s emptied\n", *name)
		return 0
	}
	if *start == "" {
		fmt.Fprintln(os.Stderr, "crawler: -start is required")
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	su, err := url.Parse(*start)
	if err != nil || su.Host == "" {
		fmt.Fprintf(os.Stderr, "crawler: -start %q is not a URL\n", *start)
		return 2
	}
	startN, _ := normalize(&url.URL{}, *start)
	nu, _ := url.Parse(startN)
	hosts := map[string]bool{nu.Host: true}
	for _, h := range strings.Split(*allow, ",") {
		if h = strings.TrimSpace(strings.ToLower(h)); h != "" {
			hosts[h] = true
		}
	}

	frontier, closeFrontier, err := openFrontier(ctx, *shared, *name, *n, *p)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawler: %v\n", err)
		return 2
	}
	defer closeFrontier()

	var out sync.Mutex
	c := &Crawler{
		Client:   &http.Client{Timeout: *timeout},
		Frontier: frontier,
		Workers:  *workers,
		Allowed:  hosts,
		MaxPages: *maxPages,
		OnFetch: func(u string, status int) {
			out.Lock()
			fmt.Printf("%d %s\n", status, u)
			out.Unlock()
		},
	}
	began := time.Now()
	st, err := c.Run(ctx, *start)
	fmt.Fprintf(os.Stderr, "crawler: fetched %d pages in %v; %d links skipped as already seen\n",
		st.Fetched, time.Since(began).Round(time.Millisecond), st.Skipped)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawler: %v\n", err)
		return 1
	}
	return 0
}

// serveDemo serves the demo site on addr until SIGINT or SIGTERM.
func serveDemo(addr string, pages int) int {
	d := newDemoSite(pages)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawler: %v\n", err)
		return 2
	}
	d.base = "http://" + l.Addr().String()
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "crawler: demo site of %d pages listening on %s/page/0\n", pages, d.base)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "crawler: %v\n", err)
		return 2
	}
	return 0
}

// localFrontier is an in-process seen-set, safe for the crawler's workers.
// The mutex makes each TestAndAdd one step: with the lock-free
// Sync view (Blocked.Sync), two workers finding the same new link at the same
// moment could both be told it is new, and the page would be fetched twice.
type localFrontier struct {
	mu *sync.Mutex
	f  *bloom.Blocked
}

func (l localFrontier) TestAndAdd(_ context.Context, u string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.TestAndAddString(u), nil
}

// redisFrontier is a seen-set kept in Redis: one atomic TestAndAdd per URL.
type redisFrontier struct{ f *redisfilter.Filter }

func (r redisFrontier) TestAndAdd(ctx context.Context, u string) (bool, error) {
	return r.f.TestAndAddString(ctx, u)
}

func openFrontier(ctx context.Context, shared, name string, n uint64, p float64) (Frontier, func(), error) {
	if shared == "" {
		f, err := bloom.NewBlocked(n, p)
		if err != nil {
			return nil, nil, err
		}
		return localFrontier{new(sync.Mutex), f}, func() {}, nil
	}
	opts, err := redis.ParseURL(shared)
	if err != nil {
		return nil, nil, fmt.Errorf("-shared: %w", err)
	}
	client := redis.NewClient(opts)
	f, err := redisfilter.Open(ctx, client, name, redisfilter.Options{Capacity: n, ErrorRate: p})
	if errors.Is(err, redisfilter.ErrParamsMismatch) {
		err = fmt.Errorf("%w (another crawl created %q with other -n/-p; use its values or another -name)", err, name)
	}
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("opening the shared seen-set: %w", err)
	}
	return redisFrontier{f}, func() { client.Close() }, nil
}
