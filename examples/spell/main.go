// Command spell lists the words of a text that are not in a dictionary,
// like the classic Unix spell: the dictionary is a Bloom filter of a word
// list (Debian's wamerican by default), which takes a fraction of the
// memory of a hash set of the same words and accepts a misspelling only at
// the filter's false-positive rate.
//
//	go run ./spell README.md
//	echo "Teh quick brown fox" | go run ./spell
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/bloomkit/bloomkit/examples/internal/flagx"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("spell", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dict := fs.String("dict", DefaultDict, "word list, one word a line")
	p := flagx.Rate(fs, "p", 0.001, "false-acceptance rate: the share of misspellings the filter lets through (0.1%)")
	stats := fs.Bool("stats", false, "print the dictionary's size and memory on stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	d, err := LoadDictionary(*dict, *p)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if *stats {
		fmt.Fprintf(stderr, "spell: %d words in %d KiB (a filter at %g%%)\n", d.Words(), d.Bytes()>>10, *p*100)
	}
	inputs := fs.Args()
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	found := false
	for _, name := range inputs {
		r, closeIn := stdin, func() {}
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintf(stderr, "spell: %v\n", err)
				return 2
			}
			r, closeIn = f, func() { f.Close() }
		}
		unknown, err := d.Check(r)
		closeIn()
		if err != nil {
			fmt.Fprintf(stderr, "spell: %s: %v\n", name, err)
			return 2
		}
		for _, u := range unknown {
			found = true
			if name == "-" {
				fmt.Fprintf(w, "%d: %s\n", u.Line, u.Word)
			} else {
				fmt.Fprintf(w, "%s:%d: %s\n", name, u.Line, u.Word)
			}
		}
	}
	// Exit status as a linter's: 0 when every word is known, 1 when some
	// were listed, 2 on an error.
	if found {
		return 1
	}
	return 0
}
