package aof

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Dir is every file operation persistence performs, on the files of one
// directory (names are relative to it). The server touches the disk only
// through it, so tests can substitute a directory that fails a chosen
// operation at its Nth call or forgets everything that was not fsynced, as
// a power cut would (see faultdir_test.go).
type Dir interface {
	// Create makes a new, empty file for writing; it fails if name exists.
	Create(name string) (File, error)
	// OpenAppend opens an existing file for appending.
	OpenAppend(name string) (File, error)
	// Open opens a file for reading.
	Open(name string) (ReadFile, error)
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

// File is a file open for writing.
type File interface {
	io.Writer
	// Sync makes what was written durable (fsync).
	Sync() error
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	Close() error
}

// ReadFile is a file open for reading.
type ReadFile interface {
	io.Reader
	io.Closer
	// Size is the file's length when it was opened.
	Size() int64
}

// OSDir is a Dir on the real file system.
type OSDir struct{ dir string }

func NewOSDir(dir string) (*OSDir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	return &OSDir{dir: dir}, nil
}

func (d *OSDir) Path(name string) string { return filepath.Join(d.dir, name) }

func (d *OSDir) Create(name string) (File, error) {
	return os.OpenFile(d.Path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

func (d *OSDir) OpenAppend(name string) (File, error) {
	return os.OpenFile(d.Path(name), os.O_WRONLY|os.O_APPEND, 0)
}

func (d *OSDir) Open(name string) (ReadFile, error) {
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

func (d *OSDir) Rename(from, to string) error { return os.Rename(d.Path(from), d.Path(to)) }

func (d *OSDir) Remove(name string) error { return os.Remove(d.Path(name)) }

func (d *OSDir) Sync() error {
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

func (d *OSDir) List() ([]string, error) {
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
