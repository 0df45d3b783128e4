//go:build race

package redisfilter

// raceEnabled: see TestSingle.
const raceEnabled = true
