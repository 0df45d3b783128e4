// Command blacklist answers "is this e-mail address's domain on the list?"
// over HTTP: disposable-mail domains, spam senders, any block list. A bloomkit
// filter built with `bloom build` answers most questions from memory; a
// positive answer is confirmed against the exact list on disk, so a filter's
// false positive never rejects a good address.
//
//	bloom build -n 200000 -p 0.001 -o domains.bloom domains.txt
//	go run ./blacklist -filter domains.bloom -list domains.txt
//	curl 'http://127.0.0.1:8081/check?email=someone@mailinator.com'
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/bloom"
)

func main() {
	fs := flag.NewFlagSet("blacklist", flag.ExitOnError)
	filterPath := fs.String("filter", "", "filter file built by `bloom build` from the list (required)")
	listPath := fs.String("list", "", "the exact list, one domain per line (required)")
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
	fs.Parse(os.Args[1:])
	if *filterPath == "" || *listPath == "" {
		fmt.Fprintln(os.Stderr, "blacklist: -filter and -list are required")
		os.Exit(2)
	}
	c, err := Open(*filterPath, *listPath, os.TempDir())
	if err != nil {
		fmt.Fprintf(os.Stderr, "blacklist: %v\n", err)
		os.Exit(2)
	}
	defer c.Close()
	slog.Info("serving", "addr", *addr, "entries", c.Entries)
	if err := http.ListenAndServe(*addr, c.Handler()); err != nil {
		fmt.Fprintf(os.Stderr, "blacklist: %v\n", err)
		os.Exit(1)
	}
}

// Checker answers list membership: filter first, exact list on a maybe.
type Checker struct {
	filter  bloom.Tester
	list    *sortedList
	Entries int

	queries, filterNo, confirmed, falsePositives atomic.Int64
}

// Open loads the filter file and prepares the exact list (sorted into a
// file under tmp).
func Open(filterPath, listPath, tmp string) (*Checker, error) {
	ff, err := os.Open(filterPath)
	if err != nil {
		return nil, err
	}
	defer ff.Close()
	f, err := bloom.Read(ff)
	if err != nil {
		return nil, fmt.Errorf("loading filter %s: %w", filterPath, err)
	}
	sorted, err := os.CreateTemp(tmp, "blacklist-*.sorted")
	if err != nil {
		return nil, err
	}
	sorted.Close()
	n, err := buildSortedList(listPath, sorted.Name(), f)
	if err != nil {
		return nil, err
	}
	l, err := openSortedList(sorted.Name())
	if err != nil {
		return nil, err
	}
	os.Remove(sorted.Name()) // stays readable while open
	return &Checker{filter: f, list: l, Entries: n}, nil
}

// Close releases the exact list.
func (c *Checker) Close() error { return c.list.Close() }

// Result is the answer for one address.
type Result struct {
	Email  string `json:"email"`
	Domain string `json:"domain"`
	// Listed is the final answer: the domain, or a parent domain of it, is
	// on the exact list.
	Listed bool `json:"listed"`
	// Match is the listed domain that matched.
	Match string `json:"match,omitempty"`
	// FilterMaybe counts the domain suffixes the filter said "maybe" to;
	// each was checked against the exact list.
	FilterMaybe int `json:"filter_maybe"`
}

// Check looks up the address's domain and each parent domain with at least
// two labels (mx.spam.example is listed if spam.example is).
func (c *Checker) Check(email string) (Result, error) {
	c.queries.Add(1)
	at := strings.LastIndexByte(email, '@')
	domain := normalizeEntry(email[at+1:])
	r := Result{Email: email, Domain: domain}
	if domain == "" || !strings.Contains(domain, ".") {
		return r, fmt.Errorf("%q has no domain", email)
	}
	for d := domain; strings.Contains(d, "."); d = d[strings.IndexByte(d, '.')+1:] {
		if !c.filter.TestString(d) {
			continue // certainly not listed: no disk read
		}
		r.FilterMaybe++
		ok, err := c.list.Contains(d)
		if err != nil {
			return r, fmt.Errorf("reading the exact list: %w", err)
		}
		if ok {
			c.confirmed.Add(1)
			r.Listed, r.Match = true, d
			return r, nil
		}
		c.falsePositives.Add(1)
	}
	if r.FilterMaybe == 0 {
		c.filterNo.Add(1)
	}
	return r, nil
}

// Stats counts what the checker did.
type Stats struct {
	Queries int64 `json:"queries"`
	// FilterOnly is the queries answered by the filter alone ("no").
	FilterOnly int64 `json:"filter_only"`
	// Confirmed is the positives the exact list confirmed.
	Confirmed int64 `json:"confirmed"`
	// FalsePositives is the filter's "maybe"s the exact list refuted: each
	// would have been a wrong rejection without the confirmation.
	FalsePositives int64 `json:"false_positives_caught"`
}

// Stats returns the counters.
func (c *Checker) Stats() Stats {
	return Stats{c.queries.Load(), c.filterNo.Load(), c.confirmed.Load(), c.falsePositives.Load()}
}

// Handler serves GET /check?email=... and GET /stats.
func (c *Checker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /check", func(w http.ResponseWriter, r *http.Request) {
		email := r.URL.Query().Get("email")
		res, err := c.Check(email)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(c.Stats())
	})
	return mux
}
