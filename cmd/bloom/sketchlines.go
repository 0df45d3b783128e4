package main

import (
	"fmt"
	"io"
)

// This file reads the keys of topk and quantile: every line of the inputs
// (or its --field column), in order, with its line number for messages.

// lineFunc receives the key of one line and its number in its input. The
// key is valid only during the call. An error ends the reading.
type lineFunc func(key []byte, line int64) error

// eachKey calls fn with the key of every line of the named inputs ("-" is
// stdin), skipping empty keys. A line without the --field column is
// skipped with a warning on stderr naming the first such line, as build
// does. Errors name the input and the line.
func eachKey(name string, inputs []string, stdin io.Reader, stderr io.Writer, spec *fieldSpec, fn lineFunc) error {
	for _, in := range inputs {
		if err := eachKeyOf(name, in, stdin, stderr, spec, fn); err != nil {
			return err
		}
	}
	return nil
}

func eachKeyOf(name, path string, stdin io.Reader, stderr io.Writer, spec *fieldSpec, fn lineFunc) error {
	in, err := openInput(path, stdin)
	if err != nil {
		return err
	}
	defer in.close()
	cr := newChunkReader(in.r)
	var line, missing, firstMissing int64
	for {
		c, ok := cr.next()
		if !ok {
			break
		}
		if c.err != nil {
			return fmt.Errorf("%s: line %d: %w", displayName(path), line+1, c.err)
		}
		for data := c.data; len(data) > 0; {
			var l []byte
			l, data = cutLine(data)
			line++
			key, ok := spec.key(l)
			if !ok {
				if missing == 0 {
					firstMissing = line
				}
				missing++
				continue
			}
			if len(key) == 0 {
				continue
			}
			if err := fn(key, line); err != nil {
				return fmt.Errorf("%s: line %d: %w", displayName(path), line, err)
			}
		}
		cr.release(c)
	}
	if missing > 0 {
		lines := fmt.Sprintf("%s lines have", commas(uint64(missing)))
		if missing == 1 {
			lines = "1 line has"
		}
		fmt.Fprintf(stderr, "bloom %s: warning: %s: %s no column %d (the first is line %d); skipped\n",
			name, displayName(path), lines, spec.field, firstMissing)
	}
	return nil
}
