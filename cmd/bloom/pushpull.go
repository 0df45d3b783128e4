package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/redisbloom"
)

func init() {
	register(command{name: "pull", summary: "save a server's BF/CF key to a file (RedisBloom dump file)", run: runPull})
	register(command{name: "push", summary: "load a saved dump file into a server's key", run: runPush})
}

var pullHelp = help{
	name:     "pull",
	synopsis: `pull [--addr ADDR] [--format scandump] KEY -o FILE`,
	about: `Saves the Bloom (BF.*) or cuckoo (CF.*) filter KEY of a server that speaks
RedisBloom's commands — bloom serve, Redis with RedisBloom, Redis 8, Redis
Cluster — to FILE, as a RedisBloom dump file: the BF.SCANDUMP/CF.SCANDUMP
stream with a checksum (docs/formats-interop.md). bloom info and bloom test
read it without a server; bloom push loads it into any of those servers; Go
code reads it with redisbloom.ReadDump.

ADDR is host:port or a redis:// (rediss:// for TLS) URL, which may hold a
password. A Redis Cluster is recognised and its keys routed by hash slot.
FILE is written atomically; "-" is stdout.`,
	examples: `bloom pull --addr 127.0.0.1:6479 --format scandump urls -o urls.dump
bloom pull --addr redis://:s3cret@cache:6379 seen -o - | gzip > seen.dump.gz`,
}

var pushHelp = help{
	name:     "push",
	synopsis: `push [--addr ADDR] [--format scandump] [--replace] FILE KEY`,
	about: `Loads the RedisBloom dump file FILE (made by bloom pull, "-" for stdin) into
KEY on a server that speaks RedisBloom's commands, with BF.LOADCHUNK or
CF.LOADCHUNK. The filter is loaded under a scratch key in the same cluster
hash slot and then renamed onto KEY, so no client sees it half-loaded. A KEY
that exists is refused unless --replace. After loading, the key's SCANDUMP
stream is read back and compared with the file's.`,
	examples: `bloom push --addr 127.0.0.1:6479 --format scandump urls.dump urls
bloom push --addr redis://redis8:6379 --replace urls.dump urls`,
}

// checkFormat accepts the file formats push and pull move. Loading
// bloomkit files into native server keys is issue 15's work.
func checkFormat(f string) error {
	if f != "scandump" {
		return fmt.Errorf("--format %q: this build moves RedisBloom dump files only (scandump)", f)
	}
	return nil
}

// signalContext is cancelled by Ctrl-C or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func runPull(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("pull")
	addr := fs.String("addr", "127.0.0.1:6479", "server `ADDR`: host:port or redis://[user:password@]host:port")
	formatFlag := fs.String("format", "scandump", "file `FORMAT`: scandump (a RedisBloom dump file)")
	out := fs.String("o", "", "write to `FILE` (required; - for stdout)")
	fb := addFeedbackFlags(fs)
	pos, code, ok := parseFlags(fs, pullHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "pull"
	if len(pos) != 1 {
		return usageErr(stderr, name, "want one KEY, got %d arguments", len(pos))
	}
	if *out == "" {
		return usageErr(stderr, name, "-o FILE is required (- for stdout)")
	}
	if err := checkFormat(*formatFlag); err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	showProgress, err := fb.enabled(stderr)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	key := pos[0]
	ctx, cancel := signalContext()
	defer cancel()
	start := time.Now()
	srv, err := dial(ctx, *addr)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	defer srv.close()
	fam, exists, err := srv.keyFamily(ctx, key)
	if err != nil {
		return failf(stderr, name, "%s: %v", *addr, err)
	}
	if !exists {
		return failf(stderr, name, "%s: no key %q", *addr, key)
	}
	var done, chunks atomic.Int64
	prog := startProgress(showProgress, stderr, 0, done.Load, &chunks, "chunks", nil)
	err = writeOutput(*out, stdout, func(w io.Writer) error {
		dw, err := redisbloom.NewDumpWriter(w, fam.dumpKind)
		if err != nil {
			return err
		}
		if err := srv.scanDump(ctx, fam, key, func(iter int64, data []byte) error {
			done.Add(int64(len(data)))
			chunks.Add(1)
			return dw.Chunk(iter, data)
		}); err != nil {
			return err
		}
		return dw.Close()
	})
	prog.finish()
	if err != nil {
		return failf(stderr, name, "%s %s → %s: %v", *addr, key, outputName(*out), err)
	}
	if showProgress {
		fmt.Fprintf(stderr, "bloom pull: %s %s (%s) → %s: %s in %s chunks, %s\n", *addr, key, fam.prefix,
			outputName(*out), humanBytes(uint64(done.Load())), commas(uint64(chunks.Load())), seconds(time.Since(start)))
	}
	return exitOK
}

func runPush(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("push")
	addr := fs.String("addr", "127.0.0.1:6479", "server `ADDR`: host:port or redis://[user:password@]host:port")
	formatFlag := fs.String("format", "scandump", "file `FORMAT`: scandump (a RedisBloom dump file)")
	replace := fs.Bool("replace", false, "replace KEY when it exists")
	fb := addFeedbackFlags(fs)
	pos, code, ok := parseFlags(fs, pushHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "push"
	if len(pos) != 2 {
		return usageErr(stderr, name, "want FILE and KEY, got %d arguments", len(pos))
	}
	if err := checkFormat(*formatFlag); err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	showProgress, err := fb.enabled(stderr)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	path, key := pos[0], pos[1]
	in, err := openInput(path, stdin)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	defer in.close()
	dr, err := redisbloom.NewDumpReader(in.r)
	if err != nil {
		return failf(stderr, name, "%s: %v", displayName(path), err)
	}
	fam := familyOfDump(dr.Kind())
	ctx, cancel := signalContext()
	defer cancel()
	start := time.Now()
	srv, err := dial(ctx, *addr)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	defer srv.close()
	if old, exists, err := srv.keyFamily(ctx, key); err != nil && !*replace {
		return failf(stderr, name, "%s: %v (--replace overwrites it)", *addr, err)
	} else if exists && !*replace {
		return failf(stderr, name, "%s: key %q exists (a %s filter); --replace overwrites it", *addr, key, old.prefix)
	}
	var chunks atomic.Int64
	prog := startProgress(showProgress, stderr, in.size, in.raw.n.Load, &chunks, "chunks", nil)
	var sum uint32
	n, err := srv.putKey(ctx, fam, key, func(load func(int64, []byte) error) error {
		for {
			iter, data, err := dr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", displayName(path), err)
			}
			sum = recordSum(sum, iter, data)
			chunks.Add(1)
			if err := load(iter, data); err != nil {
				return err
			}
		}
	})
	prog.finish()
	if err != nil {
		return failf(stderr, name, "%s → %s %s: %v (the key was not changed)", displayName(path), *addr, key, err)
	}
	got, _, err := srv.streamSum(ctx, fam, key)
	if err != nil {
		return failf(stderr, name, "%s %s: reading back: %v", *addr, key, err)
	}
	if got != sum {
		return failf(stderr, name, "%s %s: the server's SCANDUMP differs from %s after loading it", *addr, key, displayName(path))
	}
	if showProgress {
		fmt.Fprintf(stderr, "bloom push: %s → %s %s (%s): %s in %s chunks, read back equal, %s\n", displayName(path), *addr, key,
			fam.prefix, humanBytes(uint64(n)), commas(uint64(chunks.Load())), seconds(time.Since(start)))
	}
	return exitOK
}
