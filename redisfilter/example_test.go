package redisfilter_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bloomkit/bloomkit/redisfilter"
	"github.com/redis/go-redis/v9"
)

// Every process of a crawler fleet opens the same filter; the first one
// creates it. (This example needs a Redis server, so it is not run.)
func Example() {
	ctx := context.Background()
	// A redis.NewClusterClient or redis.NewFailoverClient works the same.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()

	seen, err := redisfilter.Open(ctx, client, "crawler:seen", redisfilter.Options{
		Capacity:  100_000_000, // URLs
		ErrorRate: 0.001,
	})
	if err != nil {
		log.Fatal(err) // ErrParamsMismatch if it exists with another size
	}
	for _, url := range []string{"https://a.example/", "https://b.example/"} {
		// One atomic BITFIELD: of all the processes offering the same URL
		// at once, exactly one is told it is new.
		dup, err := seen.TestAndAddString(ctx, url)
		if err != nil {
			log.Fatal(err)
		}
		if !dup {
			fmt.Println("crawl", url)
		}
	}
	// Batches: one pipelined round trip per batch of 8,192 keys.
	found, err := seen.TestMany(ctx, [][]byte{[]byte("https://a.example/"), []byte("https://c.example/")}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found)
}

// Sizing a filter for 10 billion keys before creating it: 11.5 GiB of bits
// in 64 MiB shards, which Redis Cluster spreads over its nodes.
func ExamplePlanFor() {
	plan, err := redisfilter.PlanFor(redisfilter.Options{Capacity: 10_000_000_000, ErrorRate: 0.01})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("m = %d bits (more than 2^32: %v), k = %d\n", plan.Params.M, plan.Params.M > 1<<32, plan.Params.K)
	fmt.Printf("%.1f GiB in %d shards of %d MiB\n", float64(plan.Bytes)/(1<<30), plan.Shards, plan.ShardBytes>>20)
	// Output:
	// m = 99179881472 bits (more than 2^32: true), k = 6
	// 11.5 GiB in 185 shards of 64 MiB
}
