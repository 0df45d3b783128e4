package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Load is the result of one load run.
type Load struct {
	Requests, Found, NotFound int64
	DBQueries, FilterRejects  int64
	CacheHits                 int64
	// AbsentDBQueries is the database queries made for absent ids: the
	// penetration the filter lets through.
	AbsentDBQueries int64
	P50, P99        time.Duration
	Elapsed         time.Duration
}

// runLoad sends requests lookups from workers goroutines: a fraction absent
// of them for ids in no row (above maxID), the rest for ids of existing
// rows. It fails if an existing row is reported missing.
func runLoad(ctx context.Context, g *Guard, existing []int64, maxID int64, requests, workers int, absent float64) (Load, error) {
	q0, r0, c0 := g.DBQueries.Load(), g.FilterRejects.Load(), g.CacheHits.Load()
	var (
		mu    sync.Mutex
		lat   []time.Duration
		res   Load
		first error
	)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			var mine []time.Duration
			var found, notFound int64
			for range requests / workers {
				var id int64
				want := rng.Float64() >= absent
				if want {
					id = existing[rng.IntN(len(existing))]
				} else {
					id = maxID + 1 + rng.Int64N(1<<40)
				}
				t := time.Now()
				_, err := g.Get(ctx, id)
				mine = append(mine, time.Since(t))
				switch {
				case err == nil:
					found++
				case errors.Is(err, ErrNotFound):
					notFound++
					if want {
						err = fmt.Errorf("row %d exists but was reported missing", id)
					} else {
						err = nil
					}
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			res.Found += found
			res.NotFound += notFound
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if first != nil {
		return res, first
	}
	slices.Sort(lat)
	res.Requests = int64(len(lat))
	if len(lat) > 0 {
		res.P50, res.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	res.DBQueries = g.DBQueries.Load() - q0
	res.FilterRejects = g.FilterRejects.Load() - r0
	res.CacheHits = g.CacheHits.Load() - c0
	res.AbsentDBQueries = res.DBQueries - (res.Found - res.CacheHits)
	return res, nil
}
