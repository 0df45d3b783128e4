package server

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/bloomkit/bloomkit/bloom"
)

// A classic key keeps the hash id of the file it was loaded from: a file
// written with hash id 1 (by earlier versions) answers on the server exactly
// as the library answers for it, through a snapshot and restart, and is
// dumped back byte for byte; a new classic key uses hash id 2.
func TestNativeClassicKeepsHashID(t *testing.T) {
	for _, c := range []struct {
		file string
		hash uint8
	}{
		{"classic-v1.bloom", bloom.HashXXH3},
		{"classic-hash2-v1.bloom", bloom.HashXXH3Remix},
	} {
		t.Run(c.file, func(t *testing.T) {
			file, err := os.ReadFile("../bloom/testdata/golden/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			lib, err := bloom.Read(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			if h := lib.(*bloom.Filter).Params().Hash; h != c.hash {
				t.Fatalf("%s has hash id %d, want %d", c.file, h, c.hash)
			}
			// The golden filters hold these keys (bloom's tests build them).
			var added, absent []any
			for i := range 1000 {
				added = append(added, "https://golden.example.com/articles/"+strconv.Itoa(i)+"?ref=feed")
			}
			for i := range 5000 {
				absent = append(absent, "https://never-added.example.com/articles/"+strconv.Itoa(i)+"?ref=feed")
			}
			dir := t.TempDir()
			s := startServer(t, Config{Dir: dir, AppendFsync: "always"})
			rc := goRedis(t, s)
			ctx := context.Background()
			payload := file[80 : len(file)-4]
			if err := rc.BFLoadChunk(ctx, "c", 1, file[:80]).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rc.BFLoadChunk(ctx, "c", int64(len(payload))+1, payload).Err(); err != nil {
				t.Fatal(err)
			}
			answer := func(when string) {
				t.Helper()
				for _, set := range [][]any{added, absent} {
					got, err := rc.BFMExists(ctx, "c", set...).Result()
					if err != nil {
						t.Fatal(err)
					}
					for i, k := range set {
						if want := lib.TestString(k.(string)); got[i] != want {
							t.Fatalf("%s: BF.EXISTS %q = %v, the library says %v", when, k, got[i], want)
						}
					}
				}
				if got := pullFile(t, rc, "c"); !bytes.Equal(got, file) {
					t.Fatalf("%s: the key dumps differently from the file it was loaded from", when)
				}
			}
			answer("loaded")
			if err := s.Shutdown(); err != nil { // snapshot
				t.Fatal(err)
			}
			s = startServer(t, Config{Dir: dir, AppendFsync: "always"})
			rc = goRedis(t, s)
			answer("after a restart from the snapshot")
			// A new classic key gets the newest id.
			if err := rc.Do(ctx, "BF.RESERVE", "n", "0.01", "100", "LAYOUT", "classic").Err(); err != nil {
				t.Fatal(err)
			}
			f, err := bloom.Read(bytes.NewReader(pullFile(t, rc, "n")))
			if err != nil {
				t.Fatal(err)
			}
			if h := f.(*bloom.Filter).Params().Hash; h != bloom.HashXXH3Remix {
				t.Errorf("a new classic key has hash id %d, want %d", h, bloom.HashXXH3Remix)
			}
		})
	}
}
