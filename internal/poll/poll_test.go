package poll

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	err := Wait(10*time.Second, func() error {
		if calls.Add(1) < 4 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls.Load() != 4 {
		t.Fatalf("Wait = %v after %d calls, want nil after 4", err, calls.Load())
	}
}

func TestWaitGivesTheLastErrorAtTheDeadline(t *testing.T) {
	start := time.Now()
	n := 0
	err := Wait(30*time.Millisecond, func() error {
		n++
		return errors.New("closed")
	})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Wait = %v, want the condition's error", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the deadline", d)
	}
	if n < 2 {
		t.Fatalf("asked %d times in 30 ms", n)
	}
}

func TestWaitContextStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := WaitContext(ctx, time.Hour, func() error { return errors.New("never") })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitContext = %v, want context.Canceled", err)
	}
}
