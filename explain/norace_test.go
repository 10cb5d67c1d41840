//go:build !race

package explain_test

const raceEnabled = false
