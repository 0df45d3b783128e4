package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func post(t *testing.T, url string, req request) []string {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	var out struct{ Items []string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Items
}

func TestSeenWithinWindow(t *testing.T) {
	const window = 30 * 24 * time.Hour
	// 8 users × 75 days offer about 30,000 candidates: a wrongly hidden rate of
	// 2% (the bound) is about 300 more than the configured 1% expects, 15σ.
	const users, perDay = 8, 50
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := NewStore(window, 30*perDay, 0.01, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(s))
	defer srv.Close()

	shownOn := map[string]map[string]time.Time{} // user -> item -> when shown
	candidates := func(u string, day int) []string {
		// Each day's candidates: 50 new items and 50 shown on earlier days.
		var c []string
		for i := range perDay {
			c = append(c, fmt.Sprintf("item-%d-%d", day, i))
		}
		for it := range shownOn[u] {
			if len(c) == 2*perDay {
				break
			}
			c = append(c, it)
		}
		return c
	}
	hidden, offered := 0, 0
	for day := range 75 {
		now := clk.now()
		for ui := range users {
			u := fmt.Sprintf("user-%d", ui)
			if shownOn[u] == nil {
				shownOn[u] = map[string]time.Time{}
			}
			cands := candidates(u, day)
			got := post(t, srv.URL+"/unseen", request{User: u, Items: cands})
			for _, it := range cands {
				when, wasShown := shownOn[u][it]
				returned := slices.Contains(got, it)
				switch {
				case wasShown && now.Sub(when) <= window && returned:
					t.Fatalf("day %d: %s shown to %s on %v came back within the window", day, it, u, when)
				case wasShown && now.Sub(when) > window+window/4 && !returned:
					// forgotten by t+T+T/G; not returned only by a false positive
					hidden++
				case !wasShown && !returned:
					hidden++
				}
				if !wasShown || now.Sub(when) > window+window/4 {
					offered++
				}
			}
			post(t, srv.URL+"/impressions", request{User: u, Items: got})
			for _, it := range got {
				shownOn[u][it] = now
			}
		}
		clk.add(24 * time.Hour)
	}
	rate := float64(hidden) / float64(offered)
	t.Logf("%d users x 75 days: %d of %d candidates that should be offered were hidden (%.3f%%, configured 1%%)", users, hidden, offered, 100*rate)
	if rate > 0.02 {
		t.Errorf("wrongly hidden rate %.4f is above twice the configured 1%%", rate)
	}

	// Save, load into a fresh store, same answers.
	path := filepath.Join(t.TempDir(), "seen.state")
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	s2, _ := NewStore(window, 30*perDay, 0.01, clk.now)
	if err := s2.Load(path); err != nil {
		t.Fatal(err)
	}
	for ui := range users {
		u := fmt.Sprintf("user-%d", ui)
		c := candidates(u, 100)
		if a, b := s.Unseen(u, c), s2.Unseen(u, c); !slices.Equal(a, b) {
			t.Fatalf("%s: reloaded store answers differently", u)
		}
	}
}

func TestForgetsAfterWindow(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := NewStore(4*time.Hour, 100, 0.001, clk.now)
	s.Record("u", []string{"a"})
	clk.add(4 * time.Hour)
	if got := s.Unseen("u", []string{"a", "b"}); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("at t+T: %v, want [b]", got)
	}
	clk.add(time.Hour) // T/G later
	if got := s.Unseen("u", []string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("at t+T+T/G: %v, want [a b]", got)
	}
	if got := s.Unseen("nobody", []string{"x"}); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("unknown user: %v", got)
	}
}
