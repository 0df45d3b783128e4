//go:build race

package bloom

// raceEnabled: see statistical.
const raceEnabled = true
