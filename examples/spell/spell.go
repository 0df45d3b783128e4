package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bloomkit/bloomkit/bloom"
)

// DefaultDict is where Debian's wamerican package puts its word list
// (about 104,000 words, one a line, with proper nouns capitalised and
// possessives such as "dog's").
const DefaultDict = "/usr/share/dict/american-english"

// Dictionary answers "is this a word?" from a Bloom filter of a word list:
// a misspelling is accepted only when the filter errs (at about its rate),
// and a listed word is never rejected.
type Dictionary struct {
	filter *bloom.Filter
	words  int
}

// LoadDictionary reads a word list (one word a line; blank lines and lines
// starting with # are skipped) and builds a filter for it at rate p.
func LoadDictionary(path string, p float64) (*Dictionary, error) {
	words, err := readWords(path)
	if err != nil {
		return nil, err
	}
	return NewDictionary(words, p)
}

// NewDictionary builds a dictionary of words at false-acceptance rate p.
func NewDictionary(words []string, p float64) (*Dictionary, error) {
	f, err := bloom.New(uint64(max(len(words), 1)), p)
	if err != nil {
		return nil, fmt.Errorf("spell: %w", err)
	}
	for _, w := range words {
		f.AddString(w)
	}
	return &Dictionary{filter: f, words: len(words)}, nil
}

// readWords reads the words of a list file.
func readWords(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("spell: word list: %w (on Debian: apt-get install wamerican)", err)
	}
	defer f.Close()
	var words []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.TrimSpace(sc.Text())
		if w == "" || strings.HasPrefix(w, "#") {
			continue
		}
		words = append(words, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("spell: %s: %w", path, err)
	}
	return words, nil
}

// Words is the number of words the dictionary was built from.
func (d *Dictionary) Words() int { return d.words }

// Bytes is the memory the dictionary's filter takes.
func (d *Dictionary) Bytes() uint64 { return (d.filter.Params().M + 7) / 8 }

// Known reports whether word is (probably) in the list, as written or, for
// a word capitalised at the start of a sentence, in lower case: "The" is
// known because "the" is, but "paris" is not known because only "Paris" is.
func (d *Dictionary) Known(word string) bool {
	if d.filter.TestString(word) {
		return true
	}
	r, size := utf8.DecodeRuneInString(word)
	if unicode.IsUpper(r) {
		lower := string(unicode.ToLower(r)) + word[size:]
		if d.filter.TestString(lower) || d.filter.TestString(strings.ToLower(word)) {
			return true
		}
	}
	return false
}

// Unknown is a word of the text that the dictionary does not know, with
// where it was found.
type Unknown struct {
	Word string
	Line int
}

// Check reads text and returns the words the dictionary does not know, in
// order. A word is a run of letters, with apostrophes inside it ("don't",
// "dog's"); numbers and punctuation are not words.
func (d *Dictionary) Check(text io.Reader) ([]Unknown, error) {
	var out []Unknown
	sc := bufio.NewScanner(text)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		for _, w := range splitWords(sc.Text()) {
			if !d.Known(w) {
				out = append(out, Unknown{Word: w, Line: line})
			}
		}
	}
	return out, sc.Err()
}

// splitWords returns the words of a line.
func splitWords(s string) []string {
	var words []string
	start := -1
	runes := []rune(s)
	for i := 0; i <= len(runes); i++ {
		letter := i < len(runes) && unicode.IsLetter(runes[i])
		// An apostrophe between two letters is part of the word.
		if i < len(runes) && (runes[i] == '\'' || runes[i] == '’') && start >= 0 && i+1 < len(runes) && unicode.IsLetter(runes[i+1]) {
			continue
		}
		if letter && start < 0 {
			start = i
		}
		if !letter && start >= 0 {
			words = append(words, strings.ReplaceAll(string(runes[start:i]), "’", "'"))
			start = -1
		}
	}
	return words
}
