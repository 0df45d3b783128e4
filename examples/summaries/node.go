package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Node is one cache node of a group of siblings (the "summary cache" scheme
// of Fan, Cao, Almeida and Broder). It keeps an LRU cache of values and
// publishes a Bloom filter of the keys it holds, rebuilt every refresh; it
// fetches its siblings' filters on the same schedule. On a local miss it asks
// only the siblings whose filter says "maybe", and the origin when none has
// the key.
type Node struct {
	cache    *lru.Cache[string, []byte]
	peers    []string // sibling base URLs
	capacity int
	p        float64
	origin   func(key string) []byte
	client   *http.Client

	mu        sync.RWMutex
	summary   []byte           // our encoded filter, as served
	summaries []*bloom.Blocked // siblings' filters, nil until fetched

	stats Stats
}

// Stats counts what a node did.
type Stats struct {
	Requests      atomic.Int64 // Get calls
	LocalHits     atomic.Int64
	SiblingAsked  atomic.Int64 // sibling queries sent
	SiblingHits   atomic.Int64 // sibling queries that found the key
	SiblingWasted atomic.Int64 // sibling queries that did not (false positive or stale summary)
	SiblingSaved  atomic.Int64 // sibling queries not sent because a summary said "no"
	OriginFetches atomic.Int64
}

// NewNode returns a node with an LRU of capacity keys whose summaries are
// sized for capacity keys at rate p; origin produces a value on a miss
// everywhere.
func NewNode(capacity int, p float64, peers []string, origin func(string) []byte) (*Node, error) {
	c, err := lru.New[string, []byte](capacity)
	if err != nil {
		return nil, err
	}
	n := &Node{cache: c, peers: peers, capacity: capacity, p: p, origin: origin,
		client: &http.Client{Timeout: 5 * time.Second}, summaries: make([]*bloom.Blocked, len(peers))}
	return n, n.rebuild()
}

// rebuild makes a fresh filter of the keys held now. A Bloom filter cannot
// forget evicted keys, so it is rebuilt rather than updated.
func (n *Node) rebuild() error {
	f, err := bloom.NewBlocked(uint64(n.capacity), n.p)
	if err != nil {
		return err
	}
	for _, k := range n.cache.Keys() {
		f.AddString(k)
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		return err
	}
	n.mu.Lock()
	n.summary = b.Bytes()
	n.mu.Unlock()
	return nil
}

// Refresh rebuilds this node's summary and fetches every sibling's. A
// sibling that cannot be reached keeps no summary: it is then not asked.
func (n *Node) Refresh(ctx context.Context) error {
	if err := n.rebuild(); err != nil {
		return err
	}
	for i, peer := range n.peers {
		f, err := n.fetchSummary(ctx, peer)
		n.mu.Lock()
		n.summaries[i] = f // nil on error
		n.mu.Unlock()
		_ = err
	}
	return nil
}

func (n *Node) fetchSummary(ctx context.Context, peer string) (*bloom.Blocked, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, peer+"/summary", nil)
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/summary: %s", peer, resp.Status)
	}
	f := new(bloom.Blocked)
	if _, err := f.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("%s/summary: %w", peer, err)
	}
	return f, nil
}

// Get returns the value of key: from this node, a sibling, or the origin.
func (n *Node) Get(ctx context.Context, key string) ([]byte, string, error) {
	n.stats.Requests.Add(1)
	if v, ok := n.cache.Get(key); ok {
		n.stats.LocalHits.Add(1)
		return v, "local", nil
	}
	n.mu.RLock()
	sums := append([]*bloom.Blocked(nil), n.summaries...)
	n.mu.RUnlock()
	for i, peer := range n.peers {
		if sums[i] == nil || !sums[i].TestString(key) {
			n.stats.SiblingSaved.Add(1)
			continue
		}
		n.stats.SiblingAsked.Add(1)
		v, ok, err := n.askSibling(ctx, peer, key)
		if err != nil || !ok {
			n.stats.SiblingWasted.Add(1)
			continue
		}
		n.stats.SiblingHits.Add(1)
		n.cache.Add(key, v)
		return v, peer, nil
	}
	n.stats.OriginFetches.Add(1)
	v := n.origin(key)
	n.cache.Add(key, v)
	return v, "origin", nil
}

func (n *Node) askSibling(ctx context.Context, peer, key string) ([]byte, bool, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, peer+"/local?key="+url.QueryEscape(key), nil)
	resp, err := n.client.Do(req)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, false, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, fmt.Errorf("%s: %s", peer, resp.Status)
	}
	v, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return v, err == nil, err
}

// Handler serves the node's API:
//
//	GET  /get?key=K    the value, from wherever it is (header X-Source says where)
//	GET  /local?key=K  the value only if this node holds it (404 otherwise)
//	GET  /summary      this node's filter, in the bloomkit file format
//	POST /refresh      rebuild and re-fetch summaries now
//	GET  /stats        counters, JSON
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		v, src, err := n.Get(r.Context(), r.URL.Query().Get("key"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("X-Source", src)
		w.Write(v)
	})
	mux.HandleFunc("GET /local", func(w http.ResponseWriter, r *http.Request) {
		v, ok := n.cache.Peek(r.URL.Query().Get("key"))
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(v)
	})
	mux.HandleFunc("GET /summary", func(w http.ResponseWriter, r *http.Request) {
		n.mu.RLock()
		b := n.summary
		n.mu.RUnlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		io.Copy(w, bytes.NewReader(b))
	})
	mux.HandleFunc("POST /refresh", func(w http.ResponseWriter, r *http.Request) {
		if err := n.Refresh(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(n.Snapshot())
	})
	return mux
}

// Snapshot is Stats as plain numbers.
type Snapshot struct {
	Requests, LocalHits, SiblingAsked, SiblingHits, SiblingWasted, SiblingSaved, OriginFetches int64
}

// Snapshot returns the counters now.
func (n *Node) Snapshot() Snapshot {
	s := &n.stats
	return Snapshot{s.Requests.Load(), s.LocalHits.Load(), s.SiblingAsked.Load(), s.SiblingHits.Load(),
		s.SiblingWasted.Load(), s.SiblingSaved.Load(), s.OriginFetches.Load()}
}
