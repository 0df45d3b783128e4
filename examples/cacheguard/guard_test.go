package main

import (
	"github.com/bloomkit/bloomkit/examples/internal/pgtest"

	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

func testGuard(t *testing.T, dsn string) {
	ctx := context.Background()
	db, cleanup, err := openDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	// 30,000 requests make about 27,000 absent lookups: at most about 270
	// reach the database through a filter of rate p (fewer: it is not
	// full). The inserter below reads each row it inserts, and those reads
	// count among the database queries too (up to inserts of them, 0.4%
	// of the absent lookups); the bound of 2p stays 7 standard deviations
	// above the two together.
	const rows, requests, absent, p = 20_000, 30_000, 0.9, 0.01
	ids, err := fill(ctx, db, rows)
	if err != nil {
		t.Fatal(err)
	}
	maxID := int64(rows) * 4

	// Without a filter every absent lookup reaches the database.
	plain, err := OpenGuard(ctx, db, rows/10, false, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := runLoad(ctx, plain, ids, maxID, requests, 8, absent)
	if err != nil {
		t.Fatal(err)
	}

	g, err := OpenGuard(ctx, db, rows/10, true, 2*rows, p)
	if err != nil {
		t.Fatal(err)
	}
	// Rows inserted while the load runs must be found as soon as Insert
	// returns.
	var wg sync.WaitGroup
	wg.Add(1)
	const inserts = 100
	inserted := make(chan int64, inserts)
	go func() {
		defer wg.Done()
		defer close(inserted)
		for i := range inserts {
			id := maxID*2 + int64(i)
			if err := g.Insert(ctx, Row{ID: id, Name: "new"}); err != nil {
				t.Error(err)
				return
			}
			if _, err := g.Get(ctx, id); err != nil {
				t.Errorf("row %d inserted, then %v", id, err)
				return
			}
			inserted <- id
		}
	}()
	lf, err := runLoad(ctx, g, ids, maxID*3, requests, 8, absent)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var all []int64
	for id := range inserted {
		all = append(all, id)
	}
	for _, id := range append(ids, all...) {
		if _, err := g.Get(ctx, id); err != nil {
			t.Fatalf("row %d: %v", id, err)
		}
	}
	// Absent lookups reach the database at about the filter's rate (it holds
	// 20,100 of the 40,000 ids it is sized for, so at most p).
	leak := float64(lf.AbsentDBQueries) / float64(lf.NotFound)
	if leak > 2*p {
		t.Errorf("%d of %d absent lookups reached the database (%.2f%%), the filter's rate is %g", lf.AbsentDBQueries, lf.NotFound, 100*leak, p)
	}
	if lp.AbsentDBQueries != lp.NotFound {
		t.Errorf("without a filter %d absent lookups made %d absent queries", lp.NotFound, lp.AbsentDBQueries)
	}
	t.Logf("without filter: %d DB queries (%d for absent ids), p50 %v p99 %v", lp.DBQueries, lp.AbsentDBQueries, lp.P50, lp.P99)
	t.Logf("with filter: %d DB queries (%d for absent ids: %.2f%% of %d absent lookups), %d answered by the filter, p50 %v p99 %v",
		lf.DBQueries, lf.AbsentDBQueries, 100*leak, lf.NotFound, lf.FilterRejects, lf.P50, lf.P99)
	if _, err := g.Get(ctx, -1); !errors.Is(err, ErrNotFound) {
		t.Errorf("id -1: %v", err)
	}
}

func TestGuardSQLite(t *testing.T) { testGuard(t, "") }

// TestGuardPostgres runs against a throw-away PostgreSQL cluster that it
// starts (package pgtest), or the one named by BLOOMKIT_PG_DSN (a database
// it may create a "users" table in). Without PostgreSQL it skips, or fails
// when BLOOMKIT_REQUIRE_PG=1 (CI).
func TestGuardPostgres(t *testing.T) {
	dsn := os.Getenv("BLOOMKIT_PG_DSN")
	if dsn == "" {
		if testing.Short() {
			t.Skip("starts a PostgreSQL cluster: make test runs it, make test-short does not (TestGuardSQLite runs the same guard)")
		}
		dsn = pgtest.Start(t)
	}
	testGuard(t, dsn)
}

func TestMainTable(t *testing.T) {
	// The command's own table: the filter must cut the queries by far.
	out := captureMain(t, "-rows", "5000", "-requests", "20000")
	if !containsAll(out, "LRU cache only", "bloom filter") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	t.Log("\n" + out)
}

func captureMain(t *testing.T, args ...string) string {
	t.Helper()
	r, w, _ := os.Pipe()
	old, oldArgs := os.Stdout, os.Args
	os.Stdout, os.Args = w, append([]string{"cacheguard"}, args...)
	done := make(chan string)
	go func() {
		b := make([]byte, 0, 4096)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				done <- string(b)
				return
			}
		}
	}()
	main()
	w.Close()
	os.Stdout, os.Args = old, oldArgs
	return <-done
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
