//go:build race

package wire

// raceEnabled: the race detector is on; sync.Pool then drops items at
// random, so allocation counts through pools mean nothing.
const raceEnabled = true
