// Command summaries runs one cache node of a sibling group that shares
// Bloom-filter summaries of what each node holds (the "summary cache" idea
// behind CDN and proxy cache meshes): a node asks a sibling for a key only
// when that sibling's summary says "maybe".
//
//	go run ./summaries -addr 127.0.0.1:9001 -peers http://127.0.0.1:9002,http://127.0.0.1:9003 &
//	go run ./summaries -addr 127.0.0.1:9002 -peers http://127.0.0.1:9001,http://127.0.0.1:9003 &
//	go run ./summaries -addr 127.0.0.1:9003 -peers http://127.0.0.1:9001,http://127.0.0.1:9002 &
//	curl 'http://127.0.0.1:9001/get?key=/img/logo.png'; curl http://127.0.0.1:9001/stats
package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/examples/internal/flagx"
)

func main() {
	fs := flag.NewFlagSet("summaries", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:9001", "listen address")
	peers := fs.String("peers", "", "comma-separated base URLs of the sibling nodes")
	capacity := flagx.Count(fs, "capacity", 10_000, "keys this node caches (LRU; 10K)")
	p := flagx.Rate(fs, "p", 0.01, "false-positive rate of the summaries")
	refresh := fs.Duration("refresh", 5*time.Second, "how often summaries are rebuilt and fetched")
	delay := fs.Duration("origin-delay", 2*time.Millisecond, "how long the simulated origin takes per fetch")
	fs.Parse(os.Args[1:])

	var sib []string
	for _, s := range strings.Split(*peers, ",") {
		if s = strings.TrimRight(strings.TrimSpace(s), "/"); s != "" {
			sib = append(sib, s)
		}
	}
	// The origin: an expensive computation stands in for a slow upstream.
	origin := func(key string) []byte {
		time.Sleep(*delay)
		h := sha256.Sum256([]byte(key))
		return []byte(fmt.Sprintf("value of %s: %x\n", key, h[:8]))
	}
	n, err := NewNode(int(*capacity), *p, sib, origin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "summaries: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		t := time.NewTicker(*refresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := n.Refresh(ctx); err != nil {
					slog.Warn("refresh", "err", err)
				}
			}
		}
	}()
	srv := &http.Server{Addr: *addr, Handler: n.Handler()}
	go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
	slog.Info("cache node", "addr", *addr, "peers", sib)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "summaries: %v\n", err)
		os.Exit(1)
	}
}
