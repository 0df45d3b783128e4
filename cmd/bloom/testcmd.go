package main

import (
	"bufio"
	"fmt"
	"io"
	"sync/atomic"
)

func init() {
	register(command{name: "test", summary: "ask a filter about keys, or filter stdin like grep", run: runTest})
}

var testHelp = help{
	name: "test",
	synopsis: `test [-q] [-v] FILE KEY...
test [-q] [-v] [--field COL [--delim D]] FILE < LINES`,
	about: `With keys as arguments, prints each key with "present" (probably added to
the filter: a false positive is possible, at the filter's rate) or "absent"
(certainly never added).

Without keys, acts like grep on stdin: prints the lines whose key is
(probably) in the filter, or with -v the lines whose key is certainly not.
The key is the whole line without its line ending, or with --field one
column of a CSV/TSV line (the whole line is printed). An empty key is
absent: build skips empty lines, so no filter it writes holds one.

Exit status as grep: 0 when something matched (a present key; with -v an
absent one), 1 when nothing did, 2 on an error. Put "--" before keys that
start with "-".`,
	examples: `bloom test blacklist.bf spam@example.com alice@example.org
bloom test blacklist.bf < signups.txt > flagged.txt
bloom test -v crawled.bf < frontier.txt > new-urls.txt
bloom test -q blacklist.bf "$EMAIL" && echo blocked
bloom test --field 3 --header blacklist.bf < signups.csv`,
}

func runTest(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("test")
	invert := fs.Bool("v", false, "select absent keys instead of present ones")
	quiet := fs.Bool("q", false, "print nothing; only the exit status tells")
	field := fs.Int("field", 0, "the key is column `COL` (1 is the first) of each CSV/TSV line")
	delim := fs.String("delim", ",", "column separator `D` for --field: one character, or tab")
	header := fs.Bool("header", false, "pass the first line of stdin through untested (a CSV header)")
	fb := addFeedbackFlags(fs)
	pos, code, ok := parseFlags(fs, testHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "test"
	if len(pos) == 0 {
		return usageErr(stderr, name, "missing the filter FILE")
	}
	spec, err := parseFieldFlags(fs, *field, *delim)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	showProgress, err := fb.enabled(stderr)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	if pos[0] == "-" && len(pos) == 1 {
		return usageErr(stderr, name, "the filter is read from stdin (-), so the keys must be arguments: stdin cannot hold both")
	}
	l, err := loadFilterFrom(pos[0], stdin)
	if err != nil {
		return failf(stderr, name, "%s", describeErr(err))
	}
	f, ok := l.f.(tester)
	if !ok {
		return failf(stderr, name, "%s: %s filters cannot be tested by this build", l.path, l.typeName())
	}
	if *quiet {
		stdout = io.Discard
	}
	bw := bufio.NewWriterSize(stdout, 1<<16)
	matched := false
	if keys := pos[1:]; len(keys) > 0 {
		for _, k := range keys {
			present := k != "" && f.Test([]byte(k)) // build never adds an empty key
			matched = matched || present != *invert
			word := "absent"
			if present {
				word = "present"
			}
			fmt.Fprintf(bw, "%s\t%s\n", k, word)
		}
		if err := bw.Flush(); err != nil {
			return failf(stderr, name, "stdout: %v", err)
		}
		if matched {
			return exitOK
		}
		return exitNo
	}

	in, err := openInput("-", stdin)
	if err != nil {
		return failf(stderr, name, "%v", err)
	}
	defer in.close()
	cr := newChunkReader(in.r)
	var line int64
	var lines, matches atomic.Int64
	prog := startProgress(showProgress && !*quiet, stderr, in.size, in.raw.n.Load, &lines, "lines", func() string {
		return commas(uint64(matches.Load())) + " printed"
	})
	defer prog.finish()
	for {
		c, ok := cr.next()
		if !ok {
			break
		}
		if c.err != nil {
			prog.finish()
			bw.Flush()
			return failf(stderr, name, "stdin: line %d: %v", line+1, c.err)
		}
		for data := c.data; len(data) > 0; {
			var l []byte
			l, data = cutLine(data)
			line++
			if *header && line == 1 {
				bw.Write(l)
				continue
			}
			key, ok := spec.key(l)
			if (ok && len(key) > 0 && f.Test(key)) == *invert {
				continue
			}
			matched = true
			matches.Add(1)
			if *quiet {
				return exitOK // like grep -q: the first match answers
			}
			bw.Write(l)
			if l[len(l)-1] != '\n' {
				bw.WriteByte('\n')
			}
		}
		cr.release(c)
		lines.Store(line)
		if len(cr.c) == 0 {
			// Caught up with the input: let what we have go downstream.
			if err := bw.Flush(); err != nil {
				return failf(stderr, name, "stdout: %v", err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return failf(stderr, name, "stdout: %v", err)
	}
	if matched {
		return exitOK
	}
	return exitNo
}
