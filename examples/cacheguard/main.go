// Command cacheguard shows cache-penetration protection: a read-through LRU
// cache in front of a SQL table, with a bloomkit filter of the table's ids in
// front of both. It fills a table, then sends a load where most requested
// ids exist nowhere, once without and once with the filter, and prints how
// many database queries each needed and the latencies.
//
//	go run ./cacheguard                         # embedded SQLite in a temp dir
//	go run ./cacheguard -dsn 'postgres://user@localhost/db'
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" driver for -dsn postgres://
	_ "modernc.org/sqlite"             // "sqlite" driver, pure Go

	"github.com/bloomkit/bloomkit/examples/internal/flagx"
)

func main() {
	fs := flag.NewFlagSet("cacheguard", flag.ExitOnError)
	dsn := fs.String("dsn", "", "PostgreSQL DSN (postgres://...); empty: an embedded SQLite database in a temp dir")
	rows := flagx.Count(fs, "rows", 100_000, "rows in the table (100K, 1M)")
	requests := flagx.Count(fs, "requests", 200_000, "lookups per run (200K)")
	absent := fs.Float64("absent", 0.9, "fraction of lookups for ids that exist nowhere")
	p := flagx.Rate(fs, "p", 0.01, "the filter's false-positive rate (1%, 0.01)")
	fs.Parse(os.Args[1:])

	ctx := context.Background()
	db, cleanup, err := openDB(*dsn)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cacheguard: %v\n", err)
		os.Exit(2)
	}
	defer cleanup()
	ids, err := fill(ctx, db, int(*rows))
	if err != nil {
		fmt.Fprintf(os.Stderr, "cacheguard: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d rows, %d lookups, %.0f%% of them for absent ids, cache of %d rows\n\n", *rows, *requests, 100**absent, *rows/10)
	fmt.Println("| guard | DB queries | answered by the filter | p50 | p99 | lookups/s |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, useFilter := range []bool{false, true} {
		g, err := OpenGuard(ctx, db, int(*rows/10), useFilter, *rows*2, *p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cacheguard: %v\n", err)
			os.Exit(1)
		}
		l, err := runLoad(ctx, g, ids, int64(*rows)*4, int(*requests), 8, *absent)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cacheguard: %v\n", err)
			os.Exit(1)
		}
		name := "LRU cache only"
		if useFilter {
			name = fmt.Sprintf("bloom filter (p=%g) + LRU", *p)
		}
		fmt.Printf("| %s | %d | %d | %v | %v | %.0f |\n", name, l.DBQueries, l.FilterRejects, l.P50, l.P99, float64(l.Requests)/l.Elapsed.Seconds())
	}
}

// openDB opens PostgreSQL for a postgres:// DSN, else a new SQLite file.
func openDB(dsn string) (*sql.DB, func(), error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, nil, err
		}
		return db, func() { db.Close() }, db.Ping()
	}
	if dsn != "" {
		return nil, nil, fmt.Errorf("-dsn %q: want a postgres:// URL", dsn)
	}
	dir, err := os.MkdirTemp("", "cacheguard")
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "users.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, nil, err
	}
	return db, func() { db.Close(); os.RemoveAll(dir) }, nil
}

// fill creates the table with n rows whose ids are spread over [0, 4n) and
// returns the ids.
func fill(ctx context.Context, db *sql.DB, n int) ([]int64, error) {
	if _, err := db.ExecContext(ctx, `DROP TABLE IF EXISTS users`); err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO users (id, name) VALUES ($1, $2)`)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, n)
	for i := range n {
		id := int64(i)*4 + int64(i%3) // spread out, with gaps
		if _, err := stmt.ExecContext(ctx, id, fmt.Sprintf("user %d", id)); err != nil {
			return nil, fmt.Errorf("filling the table: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, tx.Commit()
}
