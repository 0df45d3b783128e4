// Package poll waits for a condition in tests: instead of sleeping for a
// fixed time and hoping that a server has started, a write has arrived or
// a goroutine has got going, a test asks again and again, briefly at first,
// until the condition holds or a deadline passes. A fixed sleep is either
// too long (slow tests) or too short (flaky ones on a loaded machine);
// polling is as quick as the machine allows and fails with what it last saw.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Wait calls cond until it returns nil or timeout has passed, and returns
// nil or cond's last error, with how long it waited. The pause between calls
// grows from 1 ms to 50 ms.
func Wait(timeout time.Duration, cond func() error) error {
	return WaitContext(context.Background(), timeout, cond)
}

// WaitContext is Wait that also stops when ctx is done.
func WaitContext(ctx context.Context, timeout time.Duration, cond func() error) error {
	start := time.Now()
	deadline := start.Add(timeout)
	pause := time.Millisecond
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", time.Since(start).Round(time.Millisecond), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Until calls cond until it returns nil, and fails the test with cond's
// last error when timeout passes first. Call it from the test's goroutine.
func Until(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Wait(timeout, cond); err != nil {
		t.Fatal(err)
	}
}

// True is Until for a condition without an error of its own: what
// describes the condition, for the failure message.
func True(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Until(t, timeout, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("still waiting for %s", what)
	})
}
