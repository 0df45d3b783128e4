package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/internal/format"
	"github.com/bloomkit/bloomkit/redisbloom"
	"github.com/bloomkit/bloomkit/server"
)

func init() {
	register(command{name: "pull", summary: "save a server's BF/CF key to a file (bloomkit or RedisBloom dump file)", run: runPull})
	register(command{name: "push", summary: "load a saved dump file into a server's key", run: runPush})
}

var pullHelp = help{
	name:     "pull",
	synopsis: `pull [--addr ADDR] [--format bloomkit|scandump] KEY -o FILE`,
	about: `Saves the Bloom (BF.*) or cuckoo (CF.*) filter KEY of a server that speaks
RedisBloom's commands — bloom serve, Redis with RedisBloom, Redis 8, Redis
Cluster — to FILE.

A key bloom serve made with BF.RESERVE … LAYOUT or WINDOW (a bloomkit
filter) is saved as a bloomkit filter file, byte for byte what the bloom
package writes for the same filter: bloom.Read, bloom info, bloom test and
bloom merge read it (a window that moves to a new generation while it is
pulled is an error: pull again). Any other key is saved as a RedisBloom dump file: the
BF.SCANDUMP/CF.SCANDUMP stream with a checksum (docs/formats-interop.md),
which bloom info and bloom test read and Go code reads with
redisbloom.ReadDump. --format names the one expected; by default it follows
the key. bloom push loads either kind back.

ADDR is host:port or a redis:// (rediss:// for TLS) URL, which may hold a
password. A Redis Cluster is recognised and its keys routed by hash slot.
FILE is written atomically; "-" is stdout.`,
	examples: `bloom pull --addr 127.0.0.1:6479 --format scandump urls -o urls.dump
bloom pull --addr redis://:s3cret@cache:6379 seen -o - | gzip > seen.dump.gz`,
}

var pushHelp = help{
	name:     "push",
	synopsis: `push [--addr ADDR] [--format bloomkit|scandump] [--replace] FILE KEY`,
	about: `Loads FILE ("-" for stdin) into KEY on a server that speaks RedisBloom's
commands, with BF.LOADCHUNK or CF.LOADCHUNK. FILE is either a bloomkit filter
file of a classic, blocked or window filter (bloom build, bloom merge,
bloom pull, or the bloom package's WriteTo) — which becomes a bloomkit key
of bloom serve, answering BF.EXISTS exactly as bloom test answers for the
file — or a RedisBloom dump file made by bloom pull. The kind is read from
the file; --format names the one expected. The filter is loaded under a scratch key in the same cluster
hash slot and then renamed onto KEY, so no client sees it half-loaded. A KEY
that exists is refused unless --replace. After loading, the key's SCANDUMP
stream is read back and compared with the file's.`,
	examples: `bloom push --addr 127.0.0.1:6479 --format scandump urls.dump urls
bloom push --addr redis://redis8:6379 --replace urls.dump urls`,
}

// The file formats push and pull move.
const (
	formatBloomkit = "bloomkit" // a bloomkit filter file (docs/format.md)
	formatScandump = "scandump" // a RedisBloom dump file (docs/formats-interop.md)
)

// checkFormat accepts --format's values; "" follows the key or the file.
func checkFormat(f string) error {
	switch f {
	case "", formatBloomkit, formatScandump:
		return nil
	}
	return fmt.Errorf("--format %q: want bloomkit (a bloomkit filter file) or scandump (a RedisBloom dump file)", f)
}

// addAddrFlag is pull's and push's --addr.
func addAddrFlag(fs *flag.FlagSet) *string {
	return fs.String("addr", server.DefaultAddr, "server `ADDR`: host:port or redis://[user:password@]host:port")
}

// signalContext is cancelled by Ctrl-C or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func runPull(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("pull")
	addr := addAddrFlag(fs)
	formatFlag := fs.String("format", "", "file `FORMAT`: bloomkit or scandump (default: bloomkit for a bloomkit key, else scandump)")
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
	native := fam == familyNative
	if *formatFlag == formatBloomkit && !native {
		return failf(stderr, name, "%s: key %q is a RedisBloom-layout filter: it is pulled as a RedisBloom dump file (--format scandump); bloomkit files hold the keys made with BF.RESERVE … LAYOUT or WINDOW", *addr, key)
	}
	if *formatFlag == formatScandump && native {
		return failf(stderr, name, "%s: key %q is a bloomkit filter: it is pulled as a bloomkit file (--format bloomkit)", *addr, key)
	}
	var done, chunks atomic.Int64
	prog := startProgress(showProgress, stderr, 0, done.Load, &chunks, "chunks", nil)
	err = writeOutput(*out, stdout, func(w io.Writer) error {
		if native {
			_, err := pullNative(ctx, srv, key, w, func(n int) { done.Add(int64(n)); chunks.Add(1) })
			return err
		}
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
	addr := addAddrFlag(fs)
	formatFlag := fs.String("format", "", "file `FORMAT` expected: bloomkit or scandump (default: read from the file)")
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
	br := bufio.NewReaderSize(in.r, 1<<20)
	magic, _ := br.Peek(len(format.Magic))
	native := string(magic) == format.Magic
	switch {
	case native && *formatFlag == formatScandump:
		return failf(stderr, name, "%s: a bloomkit filter file, not a RedisBloom dump file (--format scandump)", displayName(path))
	case !native && *formatFlag == formatBloomkit:
		return failf(stderr, name, "%s: not a bloomkit filter file (--format bloomkit)", displayName(path))
	}
	var dr *redisbloom.DumpReader
	fam := familyNative
	if !native {
		if dr, err = redisbloom.NewDumpReader(br); err != nil {
			return failf(stderr, name, "%s: %v", displayName(path), err)
		}
		fam = familyOfDump(dr.Kind())
	}
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
		if native {
			var err error
			sum, err = pushNative(br, func(iter int64, data []byte) error {
				chunks.Add(1)
				return load(iter, data)
			})
			if err != nil {
				return fmt.Errorf("%s: %w", displayName(path), err)
			}
			return nil
		}
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
	var got uint32
	if native {
		got, err = nativeSum(ctx, srv, key)
	} else {
		got, _, err = srv.streamSum(ctx, fam, key)
	}
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

// A bloomkit key's SCANDUMP stream is a bloomkit file without its CRC
// trailer: the header chunk (the 80-byte header, and for a window its
// configuration and start times), then the bit arrays in chunks that never
// span two arrays, then a chunk of the generations' item counts, which a
// file has no place for (docs/commands.md, "Native filters").

// nativeChunk is the most pushNative sends per BF.LOADCHUNK (the server
// sends 1 MiB; any size that stays within one array works).
const nativeChunk = 1 << 20

// pullNative writes key's stream to w as a bloomkit file: everything up to
// the end the header gives, then the CRC-32C trailer; progress is told each
// chunk's size. It returns the CRC (the trailer's value).
func pullNative(ctx context.Context, srv *remote, key string, w io.Writer, progress func(int)) (uint32, error) {
	var want, got uint64
	var sum uint32
	err := srv.scanDump(ctx, familyNative, key, func(iter int64, data []byte) error {
		if got == 0 {
			if len(data) < format.HeaderSize {
				return fmt.Errorf("BF.SCANDUMP %s: a header of %d bytes", key, len(data))
			}
			h, err := format.ParseHeader(data[:format.HeaderSize])
			if err != nil {
				return fmt.Errorf("BF.SCANDUMP %s: %w", key, err)
			}
			want = format.HeaderSize + h.PayloadLen
		}
		if got >= want {
			return nil // the counts chunk
		}
		if got+uint64(len(data)) > want {
			return fmt.Errorf("BF.SCANDUMP %s: more data than the header announces (was the key changed while it was pulled?)", key)
		}
		got += uint64(len(data))
		sum = crc32.Update(sum, format.Castagnoli, data)
		progress(len(data))
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return 0, err
	}
	if got != want {
		return 0, fmt.Errorf("BF.SCANDUMP %s: %d bytes, the header announces %d (was the key changed while it was pulled?)", key, got, want)
	}
	_, err = w.Write(binary.LittleEndian.AppendUint32(nil, sum))
	return sum, err
}

// pushNative reads a bloomkit file of a classic, blocked or window filter
// from r and calls load with the SCANDUMP pairs that rebuild it (see
// above), checking the header first and the file's CRC-32C at the end (a
// damaged file is an error after the last chunk: the caller drops the
// scratch key). It returns the CRC of the file before its trailer.
func pushNative(r io.Reader, load func(iter int64, data []byte) error) (uint32, error) {
	head := make([]byte, format.HeaderSize)
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, format.Truncated(err, "header")
	}
	h, err := format.ParseHeader(head)
	if err != nil {
		return 0, err
	}
	slots := uint64(1)
	switch h.Type {
	case format.TypeClassic, format.TypeBlocked:
	case format.TypeWindow:
		cfg := make([]byte, 16)
		if _, err := io.ReadFull(r, cfg); err != nil {
			return 0, format.Truncated(err, "window configuration")
		}
		gens := binary.LittleEndian.Uint32(cfg[8:])
		if gens < 1 || gens > 64 {
			return 0, fmt.Errorf("%w: a window of %d generations", format.ErrCorrupt, gens)
		}
		starts := make([]byte, 8*(gens+1))
		if _, err := io.ReadFull(r, starts); err != nil {
			return 0, format.Truncated(err, "window start times")
		}
		head = append(append(head, cfg...), starts...)
		slots = uint64(gens) + 1
	default:
		return 0, fmt.Errorf("a %s filter cannot be a server key (classic, blocked and window filters can)", format.TypeName(h.Type))
	}
	array := (h.M + 63) / 64 * 8
	total := array * slots
	if h.PayloadLen != uint64(len(head)-format.HeaderSize)+total {
		return 0, fmt.Errorf("%w: payload length %d does not fit m = %d", format.ErrCorrupt, h.PayloadLen, h.M)
	}
	sum := crc32.Update(0, format.Castagnoli, head)
	if err := load(1, head); err != nil {
		return 0, err
	}
	buf := make([]byte, nativeChunk)
	for off := uint64(0); off < total; {
		n := min(nativeChunk, array-off%array)
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			return 0, format.Truncated(err, "payload")
		}
		sum = crc32.Update(sum, format.Castagnoli, buf[:n])
		off += n
		if err := load(int64(1+off), buf[:n]); err != nil {
			return 0, err
		}
	}
	var trailer [4]byte
	if _, err := io.ReadFull(r, trailer[:]); err != nil {
		return 0, format.Truncated(err, "trailer")
	}
	if binary.LittleEndian.Uint32(trailer[:]) != sum {
		return 0, fmt.Errorf("%w: the file's CRC does not match its contents", format.ErrChecksum)
	}
	if n, _ := r.Read(trailer[:1]); n != 0 {
		return 0, fmt.Errorf("%w: data after the trailer", format.ErrCorrupt)
	}
	return sum, nil
}

// nativeSum is the CRC-32C of a bloomkit key as a file (its trailer).
func nativeSum(ctx context.Context, srv *remote, key string) (uint32, error) {
	return pullNative(ctx, srv, key, io.Discard, func(int) {})
}
