package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/bloomkit/bloomkit/server"
	"github.com/redis/go-redis/v9"
)

// Run a server in-process and use it with go-redis's RedisBloom methods.
func Example() {
	srv, err := server.New(server.Config{
		Addr:          "127.0.0.1:0", // any free port
		NoPersistence: true,          // or Dir: "bloomkit-data"
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		panic(err)
	}
	if err := srv.Listen(); err != nil {
		panic(err)
	}
	go srv.Serve()
	defer srv.Close()

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()

	added, _ := rdb.BFAdd(ctx, "urls", "https://a.example").Result()
	seen, _ := rdb.BFExists(ctx, "urls", "https://a.example").Result()
	other, _ := rdb.BFExists(ctx, "urls", "https://b.example").Result()
	info, _ := rdb.BFInfo(ctx, "urls").Result()
	fmt.Println(added, seen, other)
	fmt.Printf("capacity %d, size %d bytes, %d item\n", info.Capacity, info.Size, info.ItemsInserted)
	// Output:
	// true true false
	// capacity 100, size 240 bytes, 1 item
}
