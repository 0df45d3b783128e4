package main

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/bloomkit/bloomkit/bloom"
)

func init() {
	register(command{name: "merge", summary: "union of filters built with the same size and seed", run: runMerge})
}

var mergeHelp = help{
	name:     "merge",
	synopsis: `merge -o OUT FILE...`,
	about: `Writes to OUT the union of the filter FILEs: a filter that holds every key
of every input, exactly as if all the keys had been added to one filter.
The inputs must be of one type with the same bits, probes and seed (build
them with the same -n, -p, --type and --seed); otherwise merge says which
file differs and how, and writes nothing.

OUT is written atomically and may be one of the inputs. Memory: two
filters at a time.`,
	examples: `bloom merge -o all.bf monday.bf tuesday.bf wednesday.bf
bloom merge -o crawled.bf crawled.bf worker-*.bf`,
}

func runMerge(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("merge")
	out := fs.String("o", "", "write the union to `OUT` (required; - for stdout)")
	fb := addFeedbackFlags(fs)
	files, code, ok := parseFlags(fs, mergeHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	const name = "merge"
	if *out == "" {
		return usageErr(stderr, name, "-o OUT is required: where to write the union")
	}
	if len(files) == 0 {
		return usageErr(stderr, name, "no filter files to merge")
	}
	if err := checkInputs(files); err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	// Every input is read whole before OUT is written, so OUT may be one of
	// them; only a directory or an unwritable place is refused up front.
	if err := checkOutput(*out, nil); err != nil {
		return failf(stderr, name, "-o %v", err)
	}
	showProgress, err := fb.enabled(stderr)
	if err != nil {
		return usageErr(stderr, name, "%v", err)
	}
	var total int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			total += fi.Size()
		}
	}
	var merged, loadedBytes atomic.Int64
	start := time.Now()
	prog := startProgress(showProgress, stderr, total, loadedBytes.Load, &merged, "files", nil)
	defer prog.finish()
	acc, err := loadFilterFrom(files[0], stdin)
	if err != nil {
		return failf(stderr, name, "%s", describeErr(err))
	}
	merged.Add(1)
	loadedBytes.Add(acc.size)
	for _, path := range files[1:] {
		l, err := loadFilterFrom(path, stdin)
		if err != nil {
			return failf(stderr, name, "%s", describeErr(err))
		}
		merged.Add(1)
		loadedBytes.Add(l.size)
		if l.hdr.Type != acc.hdr.Type {
			return failf(stderr, name, "%s holds a %s filter and %s a %s one: only filters of one type merge",
				path, l.typeName(), acc.path, acc.typeName())
		}
		switch a := acc.f.(type) {
		case *bloom.Filter:
			err = a.Union(l.f.(*bloom.Filter))
		case *bloom.Blocked:
			err = a.Union(l.f.(*bloom.Blocked))
		case *bloom.SplitBlock:
			err = a.Union(l.f.(*bloom.SplitBlock))
		default:
			return failf(stderr, name, "%s: merging %s filters is not supported", acc.path, acc.typeName())
		}
		if err != nil {
			return failf(stderr, name, "%s and %s differ, so they cannot be merged: %v (build both with the same -n, -p, --type and --seed)",
				files[0], path, err)
		}
	}
	w, ok := acc.f.(io.WriterTo)
	if !ok {
		return failf(stderr, name, "%s: %s filters cannot be written by this build", acc.path, acc.typeName())
	}
	if err := writeOutput(*out, stdout, func(dst io.Writer) error { _, err := w.WriteTo(dst); return err }); err != nil {
		return failf(stderr, name, "%s: %v", *out, err)
	}
	prog.finish()
	if showProgress {
		s := fmt.Sprintf("bloom merge: %s: %d files", outputName(*out), merged.Load())
		if st, ok := statsOf(acc.f); ok {
			ps := bloom.Params{M: acc.hdr.M, K: acc.hdr.K}
			s += fmt.Sprintf(", %s distinct keys, rate about %s", countText(st.ApproxCount(), ps), formatRate(st.EstimatedFPR()))
		}
		fmt.Fprintf(stderr, "%s, %s\n", s, seconds(time.Since(start)))
	}
	return exitOK
}
