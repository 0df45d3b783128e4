package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/bloomkit/bloomkit/bloom"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Row is one record of the guarded table.
type Row struct {
	ID   int64
	Name string
}

// ErrNotFound is returned for ids that are in no row.
var ErrNotFound = errors.New("not found")

// Guard is a read-through cache in front of a SQL table, with a Bloom filter
// of the table's ids in front of both: a lookup of an id the filter has
// never seen is answered "not found" without touching the database. That
// stops cache penetration — floods of lookups for ids that exist nowhere,
// which a plain cache cannot absorb because there is nothing to cache.
//
// The filter is built from the table at start and updated on Insert. It never
// says "absent" for a present id, so no row is ever reported missing; for an
// absent id it says "maybe" at its false-positive rate, and only those reach
// the database.
type Guard struct {
	db     *sql.DB
	cache  *lru.Cache[int64, Row]
	filter *bloom.Blocked // nil: no filter (for comparison)

	mu sync.RWMutex // Test under RLock, Add under Lock (AddSync would do too)

	// DBQueries counts SELECTs sent to the database.
	DBQueries atomic.Int64
	// FilterRejects counts lookups the filter answered alone.
	FilterRejects atomic.Int64
	// CacheHits counts lookups the cache answered.
	CacheHits atomic.Int64
}

// OpenGuard builds the guard: it creates the table if needed and, when
// useFilter, a filter sized for expected ids at rate p from every id in it.
func OpenGuard(ctx context.Context, db *sql.DB, cacheSize int, useFilter bool, expected uint64, p float64) (*Guard, error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS users (id BIGINT PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("creating table: %w", err)
	}
	cache, err := lru.New[int64, Row](cacheSize)
	if err != nil {
		return nil, err
	}
	g := &Guard{db: db, cache: cache}
	if !useFilter {
		return g, nil
	}
	if g.filter, err = bloom.NewBlocked(expected, p); err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT id FROM users`)
	if err != nil {
		return nil, fmt.Errorf("loading ids: %w", err)
	}
	defer rows.Close()
	var buf [20]byte
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("loading ids: %w", err)
		}
		g.filter.Add(strconv.AppendInt(buf[:0], id, 10))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("loading ids: %w", err)
	}
	return g, nil
}

func (g *Guard) mayExist(id int64) bool {
	if g.filter == nil {
		return true
	}
	var buf [20]byte
	g.mu.RLock()
	ok := g.filter.Test(strconv.AppendInt(buf[:0], id, 10))
	g.mu.RUnlock()
	return ok
}

// Get returns the row with id: from the cache, else — if the filter says it
// may exist — from the database.
func (g *Guard) Get(ctx context.Context, id int64) (Row, error) {
	if r, ok := g.cache.Get(id); ok {
		g.CacheHits.Add(1)
		return r, nil
	}
	if !g.mayExist(id) {
		g.FilterRejects.Add(1)
		return Row{}, ErrNotFound
	}
	g.DBQueries.Add(1)
	r := Row{ID: id}
	err := g.db.QueryRowContext(ctx, `SELECT name FROM users WHERE id = $1`, id).Scan(&r.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return Row{}, ErrNotFound
	}
	if err != nil {
		return Row{}, fmt.Errorf("reading user %d: %w", id, err)
	}
	g.cache.Add(id, r)
	return r, nil
}

// Insert writes a row and then adds its id to the filter. The id enters the
// filter only after the row is committed, and before Insert returns, so a
// reader that saw the insert succeed also finds the row.
func (g *Guard) Insert(ctx context.Context, r Row) error {
	if _, err := g.db.ExecContext(ctx, `INSERT INTO users (id, name) VALUES ($1, $2)`, r.ID, r.Name); err != nil {
		return fmt.Errorf("inserting user %d: %w", r.ID, err)
	}
	if g.filter != nil {
		var buf [20]byte
		g.mu.Lock()
		g.filter.Add(strconv.AppendInt(buf[:0], r.ID, 10))
		g.mu.Unlock()
	}
	return nil
}
