package collector

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// The four-path test holds the marks' kind time of `records diff --json`
// as it holds every kind's time, within a microsecond, and not as a tally
// of implicit marks let go, which must agree to the nanosecond. The lines
// below are cache-1's session against cache-2's, keeping by trace, in
// process and through the exporter, from a run of the workload: of the two
// requests that computed k2 at once, the first to start ended first, and
// its start was placed 10 ns later from the session's first record in
// process (on the monotonic clock) than through the gateway (on OTLP's
// wall clock), so the marks kept were open 10 ns longer through the
// gateway. Before the marks' kind time was told from their hit rates, such
// a run failed the check "implicit marks tallied"
// (TestOneAnswerOnFourPaths/agree/a-trace=b-trace/diff).
func TestFourPathDiffHoldsTheMarksTimeAsAKindsTime(t *testing.T) {
	const inProcess = `{"total":"kind","kind":"cache","a":{"wall_ns":443429},"b":{"wall_ns":180930}}
{"total":"kind","kind":"marks","a":{"wall_ns":1284058},"b":{"wall_ns":925246}}
{"hit_rate":"key","kind":"marks","name":"GET /get","key":{},"a":{"looked_up":true,"hits":4,"tallied":4,"misses":5,"tallied_ns":461356,"median_hit_ns":98304,"mean_hit_ns":115339},"b":{"looked_up":true,"hits":2,"tallied":2,"misses":2,"tallied_ns":255801,"median_hit_ns":123864,"mean_hit_ns":127900}}`
	// read keys the lines as readAnswers does.
	read := func(text string) map[string]string {
		out := map[string]string{}
		for line := range strings.Lines(text) {
			var l map[string]any
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatal(err)
			}
			out[diffKey(l)] = canonical(l)
		}
		return out
	}
	a := read(inProcess)
	for _, c := range []struct {
		what, from, to string
		times, tallies bool // whether they agree
	}{
		{"the marks kept open 10 ns longer (the run's exporter)", `"wall_ns":1284058`, `"wall_ns":1284068`, true, true},
		{"the marks kept open 2 µs longer", `"wall_ns":1284058`, `"wall_ns":1286058`, false, true},
		{"the marks let go tallied 10 ns longer", `"tallied_ns":461356`, `"tallied_ns":461366`, true, false},
	} {
		b := read(strings.Replace(inProcess, c.from, c.to, 1))
		// As the diff subtest of compareAnswers holds them: the times
		// within what a path places differently, the tallies exactly.
		ar, at := splitMarksTallied(a, marksHitRate)
		br, bt := splitMarksTallied(b, marksHitRate)
		if times, tallies := maps.Equal(ar, alignTimes(ar, br)), maps.Equal(at, bt); times != c.times || tallies != c.tallies {
			t.Errorf("%s: the times agree %v and the tallies %v; want %v and %v", c.what, times, tallies, c.times, c.tallies)
		}
	}
}
