//go:build race

package main

// raceEnabled builds the binary under test with -race when the tests run
// with it, so that the race detector also watches the real program.
const raceEnabled = true
