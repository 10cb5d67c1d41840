//go:build race

package sessions

// raceEnabled says the race detector is on, under which sync.Pool drops
// items at random and allocation counts that rely on it do not hold.
const raceEnabled = true
