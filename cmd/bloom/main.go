// Command bloom is bloomkit's command line: it sizes, builds, queries,
// inspects and merges Bloom filter files, removes duplicate lines from a
// stream in constant memory, finds a stream's most frequent lines and
// quantiles in fixed memory, and runs the server.
//
//	bloom calc  -n 100M -p 1%                  how many bits, probes and bytes
//	bloom build -n 1M -p 0.1% -o urls.bf urls.txt
//	bloom test  urls.bf https://example.com/    or, like grep: ... | bloom test urls.bf
//	bloom dedup --state seen.bf < new.txt > fresh.txt
//	bloom info  urls.bf [--json]
//	bloom merge -o all.bf a.bf b.bf
//	bloom topk -k 20 access.log                the 20 most frequent lines
//	bloom quantile -q 0.5,0.99 latencies.txt
//
// Exit status, as for grep: 0 success, 1 a negative answer (bloom test found
// nothing), 2 an error. Errors go to stderr and name the file they concern.
// Every subcommand explains itself with --help. docs/cli.md is the manual.
//
// # Adding a subcommand
//
// A subcommand is one file that registers itself from an init function:
//
//	func init() {
//		register(command{name: "serve", summary: "run the server", run: runServe})
//	}
//
//	func runServe(args []string, stdin io.Reader, stdout, stderr io.Writer) int { ... }
//
// main.go needs no change: `bloom help` lists it, and the tests check its
// --help. The helpers in cli.go give it the conventions of the others:
// newFlags and parseFlags (flags anywhere among the arguments; --help
// printing a help{name, synopsis, about, examples} to stdout), failf and
// usageErr (a message naming the file on stderr, exit code 2), openInput
// (stdin for "-", gzip and zstd by magic bytes), writeOutput (temporary
// file and rename for regular files, links followed, devices and "-"
// streamed), addFeedbackFlags (--progress, --quiet) and the count, rate and
// size flags.
// docs/cli.md is the user's manual.
package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Exit codes shared by every subcommand.
const (
	exitOK    = 0 // success, or a positive answer
	exitNo    = 1 // a negative answer: nothing matched (like grep)
	exitError = 2 // bad usage, unreadable input, a corrupt file
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and the standard streams, and returns the exit code; it must not call
// os.Exit, so that tests and other callers can run it in-process.
type command struct {
	name    string
	summary string // one line for `bloom help`
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands holds every registered subcommand.
var commands []command

// register adds a subcommand; each subcommand's file calls it from init.
// Registering a name twice is a programming error and panics at start-up.
func register(c command) {
	if lookup(c.name) != nil {
		panic("bloom: subcommand registered twice: " + c.name)
	}
	commands = append(commands, c)
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// order is how `bloom help` lists subcommands; ones not named here follow,
// sorted by name.
var order = []string{"calc", "build", "test", "dedup", "info", "merge", "topk", "quantile", "serve"}

func sortedCommands() []command {
	cs := slices.Clone(commands)
	rank := func(name string) int {
		if i := slices.Index(order, name); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(cs, func(a, b command) int {
		if ra, rb := rank(a.name), rank(b.name); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.name, b.name)
	})
	return cs
}

func main() {
	cleanupOnSignal()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	switch name := args[0]; name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			if c := lookup(args[1]); c != nil {
				return c.run([]string{"--help"}, stdin, stdout, stderr)
			}
			fmt.Fprintf(stderr, "bloom: unknown subcommand %q\n", args[1])
			return exitError
		}
		usage(stdout)
		return exitOK
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, "bloom", version())
		return exitOK
	default:
		c := lookup(name)
		if c == nil {
			fmt.Fprintf(stderr, "bloom: unknown subcommand %q (run 'bloom help' for the list)\n", name)
			return exitError
		}
		return c.run(args[1:], stdin, stdout, stderr)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `bloom: Bloom filters from the shell

Usage:
  bloom <subcommand> [flags] [arguments]

Subcommands:
`)
	cs := sortedCommands()
	width := 0
	for _, c := range cs {
		width = max(width, len(c.name))
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'bloom <subcommand> --help' for its flags and examples.

Exit status: 0 success, 1 a negative answer (as grep: nothing matched), 2 an error.

Examples:
  bloom calc -n 100M -p 1%
  bloom build -n 1M -p 0.1% -o blacklist.bf blacklist.txt
  bloom test blacklist.bf < signups.txt
  bloom dedup --state crawled.bf < frontier.txt > to-crawl.txt
`)
}
