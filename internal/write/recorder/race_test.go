//go:build race

package recorder_test

// raceEnabled says the race detector is on: it makes sync.Pool drop a
// quarter of what it is given, at random, so pooled buffers are not
// always reused.
const raceEnabled = true
