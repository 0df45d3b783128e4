package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// dataDir is every file operation persistence performs, on the files of one
// directory (names are relative to it). The server touches the disk only
// through it, so tests can substitute a directory that fails a chosen
// operation at its Nth call or forgets everything that was not fsynced, as
// a power cut would (see faultdir_test.go).
type dataDir interface {
	// Create makes a new, empty file for writing; it fails if name exists.
	Create(name string) (dataFile, error)
	// OpenAppend opens an existing file for appending.
	OpenAppend(name string) (dataFile, error)
	// Open opens a file for reading.
	Open(name string) (readFile, error)
	// Rename replaces to with from.
	Rename(from, to string) error
	// Remove deletes name.
	Remove(name string) error
	// Sync makes the directory's entries (creates, renames, removes) durable.
	Sync() error
	// List names the files in the directory.
	List() ([]string, error)
	// Path is a name's path for messages.
	Path(name string) string
}

// dataFile is a file open for writing.
type dataFile interface {
	io.Writer
	// Sync makes what was written durable (fsync).
	Sync() error
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	Close() error
}

// readFile is a file open for reading.
type readFile interface {
	io.Reader
	io.Closer
	// Size is the file's length when it was opened.
	Size() int64
}

// osDir is a dataDir on the real file system.
type osDir struct{ dir string }

func newOSDir(dir string) (*osDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	return &osDir{dir: dir}, nil
}

func (d *osDir) Path(name string) string { return filepath.Join(d.dir, name) }

func (d *osDir) Create(name string) (dataFile, error) {
	return os.OpenFile(d.Path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

func (d *osDir) OpenAppend(name string) (dataFile, error) {
	return os.OpenFile(d.Path(name), os.O_WRONLY|os.O_APPEND, 0)
}

func (d *osDir) Open(name string) (readFile, error) {
	f, err := os.Open(d.Path(name))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &osReadFile{File: f, size: st.Size()}, nil
}

type osReadFile struct {
	*os.File
	size int64
}

func (f *osReadFile) Size() int64 { return f.size }

func (d *osDir) Rename(from, to string) error { return os.Rename(d.Path(from), d.Path(to)) }

func (d *osDir) Remove(name string) error { return os.Remove(d.Path(name)) }

func (d *osDir) Sync() error {
	f, err := os.Open(d.dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	// Some file systems cannot fsync a directory; their entries are
	// durable by other means, so that is not a failure.
	if errors.Is(err, os.ErrInvalid) {
		return nil
	}
	return err
}

func (d *osDir) List() ([]string, error) {
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
