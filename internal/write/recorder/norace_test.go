//go:build !race

package recorder_test

const raceEnabled = false
