package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
)

// Store keeps one bloom.Window per user: the items shown to that user within
// the last Window. A recommender asks it to drop already-shown items from a
// candidate list. A false positive hides an item the user has not seen (at
// most the configured rate); a shown item is never offered again within the
// window.
type Store struct {
	Window time.Duration // how long an impression is remembered
	Items  uint64        // impressions per user per window to size for
	Rate   float64       // false-positive rate per user filter
	Clock  func() time.Time

	mu    sync.Mutex
	users map[string]*user
}

type user struct {
	mu sync.Mutex // a Window needs exclusive access to add
	w  *bloom.Window
}

// NewStore returns an empty store; it fails on parameters a Window refuses.
func NewStore(window time.Duration, items uint64, rate float64, clock func() time.Time) (*Store, error) {
	s := &Store{Window: window, Items: items, Rate: rate, Clock: clock, users: map[string]*user{}}
	if _, err := s.newWindow(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) newWindow() (*bloom.Window, error) {
	return bloom.NewWindowWith(bloom.WindowConfig{Window: s.Window, Items: s.Items, Rate: s.Rate, Clock: s.Clock})
}

func (s *Store) user(id string, create bool) (*user, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[id]
	if u == nil && create {
		w, err := s.newWindow()
		if err != nil {
			return nil, err
		}
		u = &user{w: w}
		s.users[id] = u
	}
	return u, nil
}

// Record remembers that items were shown to the user now.
func (s *Store) Record(id string, items []string) error {
	u, err := s.user(id, true)
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, it := range items {
		u.w.AddString(it)
	}
	return nil
}

// Unseen returns the candidates not shown to the user within the window, in
// their order.
func (s *Store) Unseen(id string, candidates []string) []string {
	u, _ := s.user(id, false)
	if u == nil {
		return append([]string(nil), candidates...)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(candidates))
	for _, c := range candidates {
		if !u.w.TestString(c) {
			out = append(out, c)
		}
	}
	return out
}

// Users returns the number of users with a filter.
func (s *Store) Users() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.users)
}

// Save writes every user's window to path atomically (temp file, fsync,
// rename): per user, a uvarint length, the id, then the window in the
// bloomkit file format.
func (s *Store) Save(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	s.mu.Lock()
	var buf [binary.MaxVarintLen64]byte
	for id, u := range s.users {
		u.mu.Lock()
		w.Write(buf[:binary.PutUvarint(buf[:], uint64(len(id)))])
		w.WriteString(id)
		_, err = u.w.WriteTo(w)
		u.mu.Unlock()
		if err != nil {
			break
		}
	}
	s.mu.Unlock()
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("saving %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

// Load reads the windows that Save wrote. A missing file is an empty store.
func (s *Store) Load(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		n, err := binary.ReadUvarint(r)
		if err == io.EOF {
			return nil
		}
		if err != nil || n > 1<<16 {
			return fmt.Errorf("loading %s: bad user id length", path)
		}
		id := make([]byte, n)
		if _, err := io.ReadFull(r, id); err != nil {
			return fmt.Errorf("loading %s: %w", path, err)
		}
		w := new(bloom.Window)
		if _, err := w.ReadFrom(r); err != nil {
			return fmt.Errorf("loading %s, user %q: %w", path, id, err)
		}
		w.SetClock(s.Clock)
		s.mu.Lock()
		s.users[string(id)] = &user{w: w}
		s.mu.Unlock()
	}
}
