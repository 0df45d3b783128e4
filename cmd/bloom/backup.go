package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bloomkit/bloomkit/server"
	"github.com/redis/go-redis/v9"
)

func init() {
	register(command{name: "backup", summary: "copy a running server's data to a file, consistent and checked", run: runBackup})
}

// snapshotMagic starts every bloom serve snapshot (the keyspace's format:
// magic, generation, key count, keys, then a CRC-32C of everything before).
const snapshotMagic = "BKSNAP02"

// runBackup asks a server on this machine for a snapshot (BGSAVE), waits
// until one taken after the request is on disk, and copies the newest
// snapshot of its data directory to FILE: a point in time that holds
// every write acknowledged before the backup began. The copy is written
// beside FILE, checked (magic, length, CRC-32C) and renamed into place, so
// FILE is never partial. The snapshot is opened before it is read, and a
// snapshot file is never changed once written, so a later snapshot that
// removes it cannot tear the copy; if it is removed before it is opened,
// the newer one is taken.
func runBackup(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := help{
		name:     "backup",
		synopsis: "backup [--addr HOST:PORT | --addr redis://...] [--timeout D] FILE",
		about: `Asks the server (bloom serve on this machine: it reads the server's data
directory, from CONFIG GET dir) to write a snapshot, waits for it, and copies
the newest snapshot to FILE, checked and written atomically. FILE holds every
write acknowledged before the backup began. To restore, copy FILE into an
empty data directory under the name it prints (dump.N.bkdb) and start the
server there; docs/operations.md, "Backups and restore".`,
		examples: `bloom backup "bloomkit-$(date +%F).bkdb"
bloom backup --addr 127.0.0.1:6479 --timeout 30m nightly.bkdb`,
	}
	fs := newFlags("backup")
	addr := fs.String("addr", "127.0.0.1:6479", "the server: host:port or a redis:// / rediss:// URL")
	pass := fs.String("password", os.Getenv("BLOOMKIT_REQUIREPASS"), "password to AUTH with (default $BLOOMKIT_REQUIREPASS)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up when the snapshot is not written within this long")
	pos, code, ok := parseFlags(fs, h, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(stderr, "backup", "want one FILE to write the backup to")
	}
	out := pos[0]
	opt := &redis.Options{Addr: *addr}
	if u := *addr; strings.Contains(u, "://") {
		var err error
		if opt, err = redis.ParseURL(u); err != nil {
			return failf(stderr, "backup", "%s: %v", u, err)
		}
	}
	if opt.Password == "" {
		opt.Password = *pass
	}
	opt.Protocol = 2
	opt.MaxRetries = -1
	c := redis.NewClient(opt)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := backup(ctx, c, out)
	if err != nil {
		return failf(stderr, "backup", "%s: %v", opt.Addr, err)
	}
	fmt.Fprintf(stdout, "%s: %d keys, %d bytes, from %s (generation %d)\n", out, res.keys, res.size, res.from, res.gen)
	fmt.Fprintf(stdout, "restore: copy it into an empty data directory as %s and start bloom serve there\n", server.SnapshotName(res.gen))
	return exitOK
}

type backupResult struct {
	from      string
	gen, keys uint64
	size      int64
}

// backup does runBackup's work against client c.
func backup(ctx context.Context, c *redis.Client, out string) (backupResult, error) {
	dirs, err := c.ConfigGet(ctx, "dir").Result()
	if err != nil {
		return backupResult{}, err
	}
	dir := dirs["dir"]
	if dir == "" {
		return backupResult{}, errors.New("the server keeps no data directory (started without persistence): nothing to back up")
	}
	if _, err := os.Stat(dir); err != nil {
		return backupResult{}, fmt.Errorf("its data directory %s is not readable here (%v): bloom backup reads the snapshot from it, so run it on the server's machine", dir, err)
	}
	saves0, err := infoInt(ctx, c, "rdb_saves")
	if err != nil {
		return backupResult{}, err
	}
	// BGSAVE SCHEDULE: when a snapshot is running already, it began
	// before this request and may miss writes acknowledged just before
	// it; the scheduled one after it is the one to wait for.
	reply, err := c.Do(ctx, "BGSAVE", "SCHEDULE").Text()
	if err != nil {
		return backupResult{}, fmt.Errorf("BGSAVE: %w", err)
	}
	need := saves0 + 1
	if strings.Contains(reply, "scheduled") {
		need = saves0 + 2
	}
	for {
		saves, err := infoInt(ctx, c, "rdb_saves")
		if err != nil {
			return backupResult{}, err
		}
		busy, err := infoInt(ctx, c, "rdb_bgsave_in_progress")
		if err != nil {
			return backupResult{}, err
		}
		if saves >= need && busy == 0 {
			break
		}
		if busy == 0 && saves < need {
			// Nothing running and not enough saves: the snapshot failed.
			info, _ := c.Info(ctx, "persistence").Result()
			if strings.Contains(info, "rdb_last_bgsave_status:err") {
				return backupResult{}, fmt.Errorf("the snapshot failed (%s); see the server's log", infoField(info, "aof_last_write_error"))
			}
		}
		select {
		case <-ctx.Done():
			return backupResult{}, fmt.Errorf("no snapshot written in time: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The newest snapshot: ours or a later one. A snapshot after it may
	// remove it between the listing and the open: then take that one.
	for attempt := 0; ; attempt++ {
		name, gen, err := newestSnapshot(dir)
		if err != nil {
			return backupResult{}, err
		}
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) && attempt < 10 {
			continue
		}
		if err != nil {
			return backupResult{}, err
		}
		defer f.Close()
		res, err := copyChecked(f, out)
		if err != nil {
			return backupResult{}, fmt.Errorf("%s: %w", f.Name(), err)
		}
		if res.gen != gen {
			os.Remove(out)
			return backupResult{}, fmt.Errorf("%s says it is generation %d", f.Name(), res.gen)
		}
		res.from = f.Name()
		return res, nil
	}
}

// newestSnapshot is the snapshot of the highest generation in dir.
func newestSnapshot(dir string) (string, uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, err
	}
	var best uint64
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "dump.") || !strings.HasSuffix(n, ".bkdb") {
			continue
		}
		g, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(n, "dump."), ".bkdb"), 10, 64)
		if err == nil && g > best && n == server.SnapshotName(g) {
			best = g
		}
	}
	if best == 0 {
		return "", 0, fmt.Errorf("no snapshot in %s", dir)
	}
	return server.SnapshotName(best), best, nil
}

// copyChecked copies the snapshot in f to out: into a temporary file beside
// it, checked (magic, a trailing CRC-32C of everything before it), fsynced,
// then renamed over out and the directory fsynced.
func copyChecked(f *os.File, out string) (backupResult, error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".tmp-*")
	if err != nil {
		return backupResult{}, err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	r := bufio.NewReaderSize(f, 1<<20)
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var head []byte
	var tail [4]byte // the last 4 bytes read: the checksum, at the end
	tailLen := 0
	var size int64
	buf := make([]byte, 1<<20)
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			p := buf[:n]
			if _, err := w.Write(p); err != nil {
				return backupResult{}, err
			}
			if len(head) < 24 {
				head = append(head, p[:min(len(p), 24-len(head))]...)
			}
			size += int64(n)
			// Everything but the last 4 bytes goes into the CRC.
			all := append(tail[:tailLen:tailLen], p...)
			cut := len(all) - 4
			if cut > 0 {
				crc.Write(all[:cut])
				tailLen = copy(tail[:], all[cut:])
			} else {
				tailLen = copy(tail[:], all)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return backupResult{}, rerr
		}
	}
	if len(head) < 24 || string(head[:8]) != snapshotMagic || tailLen != 4 {
		return backupResult{}, errors.New("not a bloom serve snapshot")
	}
	if binary.LittleEndian.Uint32(tail[:]) != crc.Sum32() {
		return backupResult{}, errors.New("checksum mismatch: the snapshot is damaged")
	}
	if err := w.Flush(); err != nil {
		return backupResult{}, err
	}
	if err := tmp.Sync(); err != nil {
		return backupResult{}, err
	}
	if err := tmp.Close(); err != nil {
		return backupResult{}, err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return backupResult{}, err
	}
	ok = true
	if d, err := os.Open(filepath.Dir(out)); err == nil {
		d.Sync()
		d.Close()
	}
	return backupResult{gen: binary.LittleEndian.Uint64(head[8:]), keys: binary.LittleEndian.Uint64(head[16:]), size: size}, nil
}

// infoInt reads one integer field of INFO persistence.
func infoInt(ctx context.Context, c *redis.Client, field string) (int64, error) {
	info, err := c.Info(ctx, "persistence").Result()
	if err != nil {
		return 0, err
	}
	v := infoField(info, field)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("INFO persistence has no integer %s (%q): not a bloom serve server?", field, v)
	}
	return n, nil
}

func infoField(info, field string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return ""
}
