package main

import (
	"fmt"
	"io"

	"github.com/bloomkit/bloomkit/server"
)

func init() {
	register(command{name: "check-log", summary: "check (and with --fix repair) a server's append-only log file, like redis-check-aof", run: runCheckLog})
}

var checkLogHelp = help{
	name:     "check-log",
	synopsis: "check-log [--fix] FILE",
	about: `Reads an append-only log of 'bloom serve' (appendonly.<G>.aof in the data
directory) and reports its good records and the first damaged one.

A log whose last record is torn (a crash while appending) needs nothing:
the server cuts it at start-up. Damage before the end stops the server from
starting, because the records after it cannot be trusted. --fix then cuts
the file at the first bad record, after saying how many bytes that loses;
stop the server first (--fix refuses while a server holds the data
directory's lock) and keep a copy of the file. docs/operations.md tells
the whole recovery procedure.

Exit status: 0 when the log is good (or was fixed), 1 when it is damaged
and was not fixed, 2 on a usage error or when the file cannot be read.`,
	examples: `bloom check-log bloomkit-data/appendonly.3.aof
cp bloomkit-data/appendonly.3.aof /tmp/ && bloom check-log --fix bloomkit-data/appendonly.3.aof`,
}

func runCheckLog(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("check-log")
	fix := fs.Bool("fix", false, "cut the file at the first bad record (loses what follows)")
	pos, code, ok := parseFlags(fs, checkLogHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageErr(stderr, "check-log", "one FILE expected")
	}
	res, err := server.CheckLog(pos[0], *fix)
	if err != nil {
		return failf(stderr, "check-log", "%v", err)
	}
	fmt.Fprintf(stdout, "%s: log version %d, generation %d, %d bytes\n", res.Path, res.Version, res.Generation, res.Size)
	fmt.Fprintf(stdout, "good records: %d (bytes 0..%d)\n", res.Records, res.End)
	switch {
	case res.Problem == "":
		fmt.Fprintln(stdout, "the log is good")
		return exitOK
	case !res.Corrupt:
		fmt.Fprintf(stdout, "torn final record at offset %d (%s): %d bytes of a write that was never acknowledged\n", res.End, res.Problem, res.Size-res.End)
	default:
		fmt.Fprintf(stdout, "DAMAGED at offset %d (%s): %d bytes after it cannot be trusted\n", res.End, res.Problem, res.Size-res.End)
	}
	if res.Fixed {
		fmt.Fprintf(stdout, "fixed: cut at offset %d; %d bytes removed\n", res.End, res.Size-res.End)
		return exitOK
	}
	if !res.Corrupt {
		fmt.Fprintln(stdout, "the server cuts a torn final record by itself at start-up; --fix does it now")
		return exitOK
	}
	fmt.Fprintln(stdout, "run with --fix to cut the file there (keep a copy first)")
	return 1
}
