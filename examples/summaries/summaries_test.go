package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/examples/internal/prebuilt"
	"github.com/bloomkit/bloomkit/internal/poll"
)

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitUp(t *testing.T, base string) {
	t.Helper()
	poll.Until(t, time.Minute, func() error {
		resp, err := http.Get(base + "/stats")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
}

func get(t *testing.T, u string) (string, string) {
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s %s", u, resp.Status, b)
	}
	return string(b), resp.Header.Get("X-Source")
}

func stats(t *testing.T, base string) Snapshot {
	resp, err := http.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSiblingQueriesSaved runs three node processes on loopback and counts
// the sibling queries the summaries save and waste.
func TestSiblingQueriesSaved(t *testing.T) {
	bin := prebuilt.Example(t, "summaries")
	const nodes, held, p = 3, 1500, 0.01
	addrs := make([]string, nodes)
	for i := range addrs {
		addrs[i] = "http://" + freeAddr(t)
	}
	for i := range nodes {
		var peers []string
		for j := range nodes {
			if j != i {
				peers = append(peers, addrs[j])
			}
		}
		cmd := exec.Command(bin, "-addr", strings.TrimPrefix(addrs[i], "http://"), "-peers", strings.Join(peers, ","),
			"-capacity", fmt.Sprint(4*held), "-p", fmt.Sprint(p), "-refresh", "1h", "-origin-delay", "0")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	for _, a := range addrs {
		waitUp(t, a)
	}
	key := func(node, j int) string { return fmt.Sprintf("/objects/%d/%d.jpg", node, j) }
	// Warm: node i fetches its own objects from the origin. Capacity is
	// 4x that, so nothing is evicted during the test (an evicted object
	// makes the summary stale until the next refresh: a wasted query).
	for i, a := range addrs {
		for j := range held {
			get(t, a+"/get?key="+url.QueryEscape(key(i, j)))
		}
	}
	// Two refresh rounds: the first rebuilds every node's summary, the
	// second fetches them (as the periodic refresh does over two periods).
	for range 2 {
		for _, a := range addrs {
			resp, err := http.Post(a+"/refresh", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	before := make([]Snapshot, nodes)
	for i, a := range addrs {
		before[i] = stats(t, a)
	}
	// Ask each node for its siblings' objects and for objects nobody has.
	const asks = 1000
	for i, a := range addrs {
		for j := range asks {
			owner := (i + 1 + j%2) % nodes
			if _, src := get(t, a+"/get?key="+url.QueryEscape(key(owner, j))); src != addrs[owner] {
				t.Fatalf("node %d: object of node %d came from %s, want that sibling", i, owner, src)
			}
			if _, src := get(t, a+"/get?key="+url.QueryEscape(fmt.Sprintf("/new/%d/%d", i, j))); src != "origin" {
				t.Fatalf("node %d: a new object came from %s", i, src)
			}
		}
	}
	var asked, hits, wasted, saved, misses int64
	for i, a := range addrs {
		s := stats(t, a)
		asked += s.SiblingAsked - before[i].SiblingAsked
		hits += s.SiblingHits - before[i].SiblingHits
		wasted += s.SiblingWasted - before[i].SiblingWasted
		saved += s.SiblingSaved - before[i].SiblingSaved
		misses += (s.Requests - s.LocalHits) - (before[i].Requests - before[i].LocalHits)
	}
	naive := misses * (nodes - 1) // asking every sibling on every local miss
	t.Logf("%d local misses: %d sibling queries sent (%d hits, %d wasted), %d saved; asking every sibling would send %d",
		misses, asked, hits, wasted, saved, naive)
	if hits != nodes*asks {
		t.Errorf("%d sibling hits, want %d: a summary missed a key its node holds", hits, nodes*asks)
	}
	// Each local miss passes up to 2 sibling summaries that should say no.
	if limit := int64(3*p*float64(2*misses)) + 5; wasted > limit {
		t.Errorf("%d wasted sibling queries, about %d expected at p = %g", wasted, limit/3, p)
	}
	if asked >= naive/2 {
		t.Errorf("summaries saved too little: %d of %d queries sent", asked, naive)
	}
}
