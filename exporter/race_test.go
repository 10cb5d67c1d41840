//go:build race

package exporter_test

// raceEnabled says the race detector is on, which makes mapping a span
// about ten times slower: the tests that shut down a large backlog within
// a deadline make a smaller one.
const raceEnabled = true
