package main

import (
	"context"
	"path/filepath"
	"testing"
)

// bloom serve --appendonly no keeps snapshots: SAVE writes one, and a
// restart after kill -9 loads it; writes after it are not logged.
func TestServeAppendOnlyNo(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	a, c, _ := serveIn(t, dir, "--dir", data, "--appendonly", "no")
	ctx := context.Background()
	c.Do(ctx, "BF.ADD", "k", "a")
	if err := c.Do(ctx, "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, "BF.ADD", "after", "b")
	a.Process.Kill()
	a.Wait()
	_, c2, _ := serveIn(t, dir, "--dir", data, "--appendonly", "no")
	if n, err := c2.Do(ctx, "EXISTS", "k").Int(); err != nil || n != 1 {
		t.Fatalf("the snapshot's key after kill -9: %v %v", n, err)
	}
	if n, _ := c2.Do(ctx, "EXISTS", "after").Int(); n != 0 {
		t.Fatal("a write after the snapshot survived kill -9 with the log off")
	}
	bloomIn(t, dir, "", "serve", "--appendonly", "maybe").want(t, 2, "--appendonly maybe")
}
