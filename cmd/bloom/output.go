package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
)

// This file is where every file bloom writes goes through (build -o,
// merge -o, dedup --state). The rules, so that no target is ever destroyed
// by accident:
//
//   - "-" is stdout, written directly.
//   - A regular file, or a path where nothing exists yet, is replaced
//     atomically: a temporary file beside it, fsynced and renamed over it.
//     Readers see the old file or the whole new one, never part of one.
//   - A symbolic link is followed: the file it points to is replaced and the
//     link stays a link (so current.bf -> 2024-06-01.bf keeps working).
//   - Anything else (a device such as /dev/stdout or /dev/null, a FIFO, a
//     socket) is opened and written directly: renaming a file over
//     /dev/null would replace the device.
//   - The temporary file is removed on every error and on SIGINT/SIGTERM
//     (see cleanupOnSignal), so an interrupted run leaves no debris.

// outputTarget is where an output path really leads.
type outputTarget struct {
	path   string // as the user wrote it, for messages
	real   string // after following symbolic links
	stdout bool   // "-"
	stream bool   // a device, FIFO or socket: written in place
}

// resolveOutput follows path's symbolic links and decides how to write it.
// A directory is an error.
func resolveOutput(path string) (outputTarget, error) {
	t := outputTarget{path: path, real: path}
	if path == "-" {
		t.stdout, t.stream = true, true
		return t, nil
	}
	fi, err := os.Stat(path) // follows every link, /proc's magic ones too
	switch {
	case errors.Is(err, os.ErrNotExist):
		// Nothing there, or a link to a file not yet created: create it
		// where the links lead.
		real, err := followLinks(path)
		if err != nil {
			return t, err
		}
		t.real = real
		return t, nil
	case err != nil:
		return t, err
	case fi.IsDir():
		return t, fmt.Errorf("%s is a directory", path)
	case !fi.Mode().IsRegular():
		// A device, FIFO or socket: opened by the name given, which works
		// for /dev/stdout (a link to /proc/self/fd/1) as for any other.
		t.stream = true
		return t, nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return t, err
	}
	t.real = real
	return t, nil
}

// followLinks resolves path's symbolic links, also when the last one points
// at a file that does not exist yet (it will be created there).
func followLinks(path string) (string, error) {
	for hops := 0; ; hops++ {
		if hops > 40 {
			return "", fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
}

// checkOutput fails early, before a long run, when path cannot be written:
// a directory, an unwritable directory, or one of the inputs (a regular
// file that the output would replace while it is being read).
func checkOutput(path string, inputs []string) error {
	t, err := resolveOutput(path)
	if err != nil {
		return err
	}
	if t.stdout {
		return nil
	}
	if !t.stream {
		if err := checkWritable(t.real); err != nil {
			return fmt.Errorf("%s cannot be written: %w", path, err)
		}
	}
	out, err := os.Stat(t.real)
	if err != nil {
		return nil // nothing there yet: it cannot be an input
	}
	for _, in := range inputs {
		if in == "-" {
			continue
		}
		if fi, err := os.Stat(in); err == nil && os.SameFile(fi, out) && fi.Mode().IsRegular() {
			return fmt.Errorf("%s is also an input: writing it would destroy what is being read", path)
		}
	}
	return nil
}

// writeOutput writes path through write by the rules at the top of this
// file. stdout is where "-" goes.
func writeOutput(path string, stdout io.Writer, write func(w io.Writer) error) error {
	t, err := resolveOutput(path)
	if err != nil {
		return err
	}
	if t.stdout {
		bw := bufio.NewWriterSize(stdout, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	if t.stream {
		f, err := os.OpenFile(t.path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := write(bw); err != nil {
			f.Close()
			return err
		}
		if err := bw.Flush(); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return writeAtomic(t.real, write)
}

// writeAtomic writes path through write so that readers see either the old
// file or the whole new one, never part of it: it writes a temporary file in
// the same directory, fsyncs it, renames it over path and fsyncs the
// directory. A file already at path keeps its permissions; a new one gets
// 0644. On error, and on SIGINT/SIGTERM, the temporary file is removed and
// path is untouched. path must not be a symbolic link (writeOutput resolves
// them).
func writeAtomic(path string, write func(w io.Writer) error) (err error) {
	tmp, err := createTempBeside(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	defer func() {
		if err != nil {
			tmp.Close()
			removeTemp(tmp.Name())
		}
	}()
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	forgetTemp(tmp.Name())
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: some file systems cannot sync a directory
		d.Close()
	}
	return nil
}

// checkWritable fails when writeAtomic could not create its temporary file
// next to path, so that a long run does not find out only at the end.
func checkWritable(path string) error {
	tmp, err := createTempBeside(path)
	if err != nil {
		return err
	}
	tmp.Close()
	removeTemp(tmp.Name())
	return nil
}

// createTempBeside creates the temporary file for path in path's
// directory, named .NAME.tmp-RANDOM so that it sorts beside its target.
func createTempBeside(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return createTemp(dir, "."+base+".tmp-*")
}

// Temporary files in progress, removed by the signal handler.
var temps struct {
	sync.Mutex
	names map[string]bool
	// hook, when set, receives the first SIGINT/SIGTERM instead of the
	// default (remove temporary files, exit): dedup --state uses it to stop
	// reading and save its state. A second signal takes the default.
	hook chan<- os.Signal
}

func createTemp(dir, pattern string) (*os.File, error) {
	temps.Lock()
	defer temps.Unlock()
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if temps.names == nil {
		temps.names = map[string]bool{}
	}
	temps.names[f.Name()] = true
	return f, nil
}

func removeTemp(name string) {
	os.Remove(name)
	forgetTemp(name)
}

func forgetTemp(name string) {
	temps.Lock()
	delete(temps.names, name)
	temps.Unlock()
}

// setSignalHook routes the first SIGINT/SIGTERM to c (nil: back to the
// default).
func setSignalHook(c chan<- os.Signal) {
	temps.Lock()
	temps.hook = c
	temps.Unlock()
}

// cleanupOnSignal installs the process's SIGINT/SIGTERM handler: it removes
// every temporary file being written and exits with 128 + the signal number,
// as the default action would, unless a hook takes the signal.
func cleanupOnSignal() {
	c := make(chan os.Signal, 2)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range c {
			temps.Lock()
			if h := temps.hook; h != nil {
				temps.hook = nil
				temps.Unlock()
				h <- s
				continue
			}
			for name := range temps.names {
				os.Remove(name)
			}
			temps.names = nil
			// The lock stays held: no new temporary file from here on.
			code := 128 + 2
			if s == syscall.SIGTERM {
				code = 128 + 15
			}
			os.Exit(code)
		}
	}()
}

// outputName names an output in messages: "stdout" for "-".
func outputName(path string) string {
	if path == "-" {
		return "stdout"
	}
	return path
}
