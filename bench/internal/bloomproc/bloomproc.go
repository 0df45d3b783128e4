// Package bloomproc holds what bench's programs that run `bloom serve` as a
// child process share: building the binary from the repository under test
// and a go-redis client set up so that every failure reaches the program.
package bloomproc

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
)

// Build builds ./cmd/bloom of the repository at repo into dir and returns
// the binary's path.
func Build(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "bloom")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/bloom")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/bloom in %s: %w\n%s", repo, err, out)
	}
	return bin, nil
}

// ClientOptions is one connection, RESP2, no retries and the given
// timeouts. A retried write could be applied twice, and only a reply that
// arrived counts as an acknowledgement, so every failure surfaces to the
// caller; a stalled server shows as a slow reply, not a retry.
func ClientOptions(addr string, timeout time.Duration) *redis.Options {
	return &redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
	}
}

// quietLog drops go-redis's own log lines ("failed to dial after 5
// attempts" after every kill): failures reach the programs as errors.
type quietLog struct{}

// Printf discards the message.
func (quietLog) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLog{}) }
