package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bloomkit/bloomkit/internal/poll"
	"github.com/redis/go-redis/v9"
)

// waitPing waits until c's server answers PING, failing the test with
// what the server logged (log returns it) when it does not within
// timeout.
func waitPing(t testing.TB, c *redis.Client, timeout time.Duration, log func() string) {
	t.Helper()
	if err := poll.Wait(timeout, func() error { return c.Ping(context.Background()).Err() }); err != nil {
		t.Fatal(fmt.Sprintf("bloom serve on %s did not answer PING: %v; log:\n%s", c.Options().Addr, err, log()))
	}
}
