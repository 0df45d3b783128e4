package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// sortedList is the exact list, kept on disk sorted so that a lookup is a
// binary search over byte offsets: constant memory, a few reads per lookup.
// It is what a positive filter answer is confirmed against.
type sortedList struct {
	f    *os.File
	size int64
}

// normalizeEntry is how list entries and looked-up domains are compared.
func normalizeEntry(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// buildSortedList reads the list at src (one entry per line, '#' comments
// and blank lines ignored), and writes its entries sorted and de-duplicated
// to dst.
// Every entry must test present in f: a filter built from another list, or
// from entries spelled otherwise (upper case, trailing dots), would give
// false negatives, so it is refused.
func buildSortedList(src, dst string, f interface{ TestString(string) bool }) (int, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	var entries []string
	comments, commentsIn := 0, 0
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		e := normalizeEntry(sc.Text())
		if strings.HasPrefix(e, "#") {
			comments++
			if f.TestString(strings.TrimRight(sc.Text(), "\r")) {
				commentsIn++
			}
			continue
		}
		if e == "" {
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", src, err)
	}
	// A comment is not a domain: a filter built from the raw file (comments
	// as keys) is refused when every comment, two or more, tests present —
	// by chance that happens at the filter's rate squared.
	if comments >= 2 && commentsIn == comments {
		return 0, fmt.Errorf("the filter holds the %d comment lines of %s: build it from the domains only (grep -v -e '^#' -e '^$' %s | bloom build ...)", comments, src, src)
	}
	missing := 0
	for _, e := range entries {
		if !f.TestString(e) {
			missing++
		}
	}
	if missing > 0 {
		return 0, fmt.Errorf("%d of the %d entries of %s test absent in the filter: build it from this list, one lower-case domain a line", missing, len(entries), src)
	}
	slices.Sort(entries)
	entries = slices.Compact(entries)
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriter(out)
	for _, e := range entries {
		w.WriteString(e)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return 0, fmt.Errorf("writing %s: %w", dst, err)
	}
	return len(entries), out.Close()
}

func openSortedList(path string) (*sortedList, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &sortedList{f: f, size: fi.Size()}, nil
}

func (l *sortedList) Close() error { return l.f.Close() }

// lineAt returns the first whole line starting at or after off, and the
// offset just past it.
func (l *sortedList) lineAt(off int64, buf []byte) (string, int64, error) {
	if off > 0 { // skip to the start of the next line
		n, err := l.f.ReadAt(buf, off-1)
		if err != nil && err != io.EOF {
			return "", 0, err
		}
		i := bytes.IndexByte(buf[:n], '\n')
		if i < 0 {
			return "", l.size, nil
		}
		off += int64(i)
	}
	if off >= l.size {
		return "", l.size, nil
	}
	n, err := l.f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return "", 0, err
	}
	i := bytes.IndexByte(buf[:n], '\n')
	if i < 0 {
		i = n
	}
	return string(buf[:i]), off + int64(i) + 1, nil
}

// Contains reports whether entry is on the list.
func (l *sortedList) Contains(entry string) (bool, error) {
	buf := make([]byte, 512)
	lo, hi := int64(0), l.size // invariant: the entry, if present, starts in [lo, hi)
	for hi-lo > 256 {
		mid := lo + (hi-lo)/2
		line, _, err := l.lineAt(mid, buf)
		if err != nil {
			return false, err
		}
		if line == "" || entry <= line {
			hi = mid
		} else {
			lo = mid
		}
	}
	// Scan the remaining short range line by line.
	for off := lo; off < l.size; {
		line, next, err := l.lineAt(off, buf)
		if err != nil {
			return false, err
		}
		if next <= off {
			break
		}
		if line == entry {
			return true, nil
		}
		if line > entry {
			return false, nil
		}
		off = next
	}
	return false, nil
}
