// Command seen is a recommender's "already shown to this user" service: one
// bloomkit Window filter per user remembers the items shown within the last
// -window, and /unseen drops them from a candidate list.
//
//	go run ./seen -window 720h -items 5000 -p 0.01 -state seen.state
//	curl -d '{"user":"u1","items":["a","b"]}' http://127.0.0.1:8082/impressions
//	curl -d '{"user":"u1","items":["a","b","c"]}' http://127.0.0.1:8082/unseen   # {"items":["c"]}
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bloomkit/bloomkit/examples/internal/flagx"
)

func main() {
	fs := flag.NewFlagSet("seen", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:8082", "listen address")
	window := fs.Duration("window", 30*24*time.Hour, "how long an impression is remembered")
	items := flagx.Count(fs, "items", 5000, "impressions per user per window to size each filter for")
	rate := flagx.Rate(fs, "p", 0.01, "false-positive rate: the fraction of unseen items wrongly hidden")
	state := fs.String("state", "", "file the filters are loaded from at start and saved to on exit")
	fs.Parse(os.Args[1:])

	s, err := NewStore(*window, *items, *rate, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "seen: %v\n", err)
		os.Exit(2)
	}
	if *state != "" {
		if err := s.Load(*state); err != nil {
			fmt.Fprintf(os.Stderr, "seen: %v\n", err)
			os.Exit(2)
		}
	}
	srv := &http.Server{Addr: *addr, Handler: Handler(s)}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	slog.Info("serving", "addr", *addr, "users", s.Users())
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "seen: %v\n", err)
		os.Exit(1)
	}
	if *state != "" {
		if err := s.Save(*state); err != nil {
			fmt.Fprintf(os.Stderr, "seen: %v\n", err)
			os.Exit(1)
		}
	}
}

// request is the body of both endpoints.
type request struct {
	User  string   `json:"user"`
	Items []string `json:"items"`
}

// Handler serves POST /impressions (record items shown to a user) and
// POST /unseen (return the candidates not shown within the window).
func Handler(s *Store) http.Handler {
	mux := http.NewServeMux()
	decode := func(w http.ResponseWriter, r *http.Request) (request, bool) {
		var req request
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil || req.User == "" {
			http.Error(w, `want {"user": "...", "items": [...]}`, http.StatusBadRequest)
			return req, false
		}
		return req, true
	}
	mux.HandleFunc("POST /impressions", func(w http.ResponseWriter, r *http.Request) {
		req, ok := decode(w, r)
		if !ok {
			return
		}
		if err := s.Record(req.User, req.Items); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /unseen", func(w http.ResponseWriter, r *http.Request) {
		req, ok := decode(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string][]string{"items": s.Unseen(req.User, req.Items)})
	})
	return mux
}
