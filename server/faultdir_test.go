package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/bloomkit/bloomkit/server/internal/aof"
)

// memDir is an in-memory dataDir that models what survives a power cut: a
// file's contents up to its last fsync and the directory's entries
// (creates, renames, removes) up to the directory's last fsync. It can fail
// the Nth call of one operation — once, or that call and every later one
// (a full disk) — and crash() returns the directory as it would be found
// after power returns.
type memDir struct {
	mu      sync.Mutex
	names   map[string]*memInode // the namespace now
	durable map[string]*memInode // as of the last directory fsync
	calls   map[string]int
	rule    failRule
	fired   int // how many calls the rule failed
	// firedCleanup counts those in the removal of superseded files, which
	// only costs disk space and is retried at the next start.
	firedCleanup int
	// gate, when set, holds each file fsync until a value arrives (the
	// fsync then fails if it carries an error); entered is told when an
	// fsync starts waiting.
	gate    chan error
	entered chan struct{}
}

// memInode is one file: its data now and as of its last fsync.
type memInode struct {
	data, synced []byte
}

// failRule fails operation op ("create", "write", "fsync", "rename",
// "dirsync", "remove", "truncate") at its nth call after arming, and, if
// sticky, every call after it.
type failRule struct {
	op     string
	n      int
	sticky bool
	err    error
}

func newMemDir() *memDir {
	return &memDir{names: map[string]*memInode{}, durable: map[string]*memInode{}, calls: map[string]int{}}
}

// arm sets the failure rule and restarts the call counts.
func (d *memDir) arm(r failRule) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.err == nil {
		r.err = syscall.ENOSPC
	}
	d.rule, d.calls, d.fired = r, map[string]int{}, 0
}

// hit counts a call of op and reports the error it must fail with.
func (d *memDir) hit(op string) error {
	d.calls[op]++
	r := d.rule
	if r.op != op {
		return nil
	}
	if n := d.calls[op]; n == r.n || (r.sticky && n > r.n) {
		d.fired++
		if calledFrom("RemoveOlder") {
			d.firedCleanup++
		}
		return &os.PathError{Op: op, Path: "memdir", Err: r.err}
	}
	return nil
}

// firedCount is how many calls failed, not counting cleanup.
func (d *memDir) firedCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fired - d.firedCleanup
}

// calledFrom reports whether a function whose name ends in fn is on the stack.
func calledFrom(fn string) bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "."+fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// crash returns what a power cut would leave: only fsynced data under
// fsynced names. The returned directory shares nothing with d.
func (d *memDir) crash() *memDir {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := newMemDir()
	copied := map[*memInode]*memInode{}
	for name, ino := range d.durable {
		c, ok := copied[ino]
		if !ok {
			c = &memInode{data: bytes.Clone(ino.synced), synced: bytes.Clone(ino.synced)}
			copied[ino] = c
		}
		n.names[name] = c
		n.durable[name] = c
	}
	return n
}

// processCrash returns what a killed process leaves: everything written
// (the kernel still has it), whether fsynced or not.
func (d *memDir) processCrash() *memDir {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := newMemDir()
	for name, ino := range d.names {
		c := &memInode{data: bytes.Clone(ino.data), synced: bytes.Clone(ino.data)}
		n.names[name] = c
		n.durable[name] = c
	}
	return n
}

// files lists the names now, sorted (for test messages).
func (d *memDir) files() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for n, ino := range d.names {
		out = append(out, fmt.Sprintf("%s(%d)", n, len(ino.data)))
	}
	sort.Strings(out)
	return out
}

func (d *memDir) Path(name string) string { return "mem/" + name }

func (d *memDir) Create(name string) (aof.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.hit("create"); err != nil {
		return nil, err
	}
	if _, ok := d.names[name]; ok {
		return nil, &os.PathError{Op: "create", Path: name, Err: os.ErrExist}
	}
	ino := &memInode{}
	d.names[name] = ino
	return &memFile{d: d, ino: ino}, nil
}

func (d *memDir) OpenAppend(name string) (aof.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ino, ok := d.names[name]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return &memFile{d: d, ino: ino}, nil
}

func (d *memDir) Open(name string) (aof.ReadFile, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ino, ok := d.names[name]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	data := bytes.Clone(ino.data)
	return &memReader{Reader: bytes.NewReader(data), size: int64(len(data))}, nil
}

type memReader struct {
	*bytes.Reader
	size int64
}

func (r *memReader) Close() error { return nil }
func (r *memReader) Size() int64  { return r.size }

func (d *memDir) Rename(from, to string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.hit("rename"); err != nil {
		return err
	}
	ino, ok := d.names[from]
	if !ok {
		return &os.PathError{Op: "rename", Path: from, Err: os.ErrNotExist}
	}
	d.names[to] = ino
	delete(d.names, from)
	return nil
}

func (d *memDir) Remove(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.hit("remove"); err != nil {
		return err
	}
	if _, ok := d.names[name]; !ok {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	delete(d.names, name)
	return nil
}

func (d *memDir) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.hit("dirsync"); err != nil {
		return err
	}
	d.durable = make(map[string]*memInode, len(d.names))
	for n, ino := range d.names {
		d.durable[n] = ino
	}
	return nil
}

func (d *memDir) List() ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for n := range d.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// memFile is a file open for appending.
type memFile struct {
	d      *memDir
	ino    *memInode
	closed bool
}

var errClosedFile = errors.New("file already closed")

// Write appends p; a failed write stores half of p, as a full disk may.
func (f *memFile) Write(p []byte) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.closed {
		return 0, errClosedFile
	}
	if err := f.d.hit("write"); err != nil {
		half := len(p) / 2
		f.ino.data = append(f.ino.data, p[:half]...)
		return half, err
	}
	f.ino.data = append(f.ino.data, p...)
	return len(p), nil
}

// Sync makes the data durable; a failed fsync leaves it as it was, and
// Linux may have dropped the dirty pages: a crash loses them.
func (f *memFile) Sync() error {
	f.d.mu.Lock()
	gate, entered := f.d.gate, f.d.entered
	f.d.mu.Unlock()
	if gate != nil {
		if entered != nil {
			entered <- struct{}{}
		}
		if err := <-gate; err != nil {
			return &os.PathError{Op: "fsync", Path: "memdir", Err: err}
		}
	}
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.closed {
		return errClosedFile
	}
	if err := f.d.hit("fsync"); err != nil {
		return err
	}
	f.ino.synced = bytes.Clone(f.ino.data)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.closed {
		return errClosedFile
	}
	if err := f.d.hit("truncate"); err != nil {
		return err
	}
	if size < int64(len(f.ino.data)) {
		f.ino.data = f.ino.data[:size]
	}
	return nil
}

func (f *memFile) Close() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	f.closed = true
	return nil
}

var _ io.Writer = (*memFile)(nil)
