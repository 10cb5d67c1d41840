//go:build race

package sessions_test

// raceEnabled says the race detector is on, which makes the largest
// shapes too slow to test in full.
const raceEnabled = true
