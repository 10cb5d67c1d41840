package collector

// How the four-path test (fourpath_test.go) holds the answers of each
// path to the others', and to what the servers counted.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// compareAnswers holds b's answers to a's, view by view (a subtest each).
func compareAnswers(t *testing.T, a, b *fourPathAnswers) {
	pair := a.path.about + " vs " + b.path.about
	t.Run("dump", func(t *testing.T) { compareDumps(t, pair, a, b) })
	t.Run("why", func(t *testing.T) {
		for _, q := range slices.Sorted(maps.Keys(a.why)) {
			if !slices.Equal(a.why[q], b.why[q]) {
				t.Errorf("%s: why %s cache.key=%s differs:\n%s  vs\n%s", pair, strings.Fields(q)[0], strings.Fields(q)[1], whyText(a.why[q]), whyText(b.why[q]))
			}
		}
	})
	t.Run("cost", func(t *testing.T) { compareMaps(t, pair+": cost --json", a.cost, b.cost) })
	t.Run("diff", func(t *testing.T) {
		ad, am := splitMarksTallied(a.diff, marksHitRate)
		bd, bm := splitMarksTallied(b.diff, marksHitRate)
		compareDiffs(t, pair, ad, bd)
		compareMarksTallied(t, pair+": diff --json: the hit rates of marks", am, bm)
	})
	t.Run("report", func(t *testing.T) {
		for _, inst := range slices.Sorted(maps.Keys(a.reports)) {
			ar, am := splitMarksTallied(toStrings(a.reports[inst]), func(k string) bool { return k == "marks tallied" })
			br, bm := splitMarksTallied(toStrings(b.reports[inst]), func(k string) bool { return k == "marks tallied" })
			compareMaps(t, pair+": the report of "+inst, ar, br)
			compareMarksTallied(t, pair+": the report of "+inst, am, bm)
		}
	})
}

// splitMarksTallied returns m without the entries that count implicit
// marks let go (those marks says), and those entries.
func splitMarksTallied(m map[string]string, marks func(string) bool) (rest, tallied map[string]string) {
	rest, tallied = map[string]string{}, map[string]string{}
	for k, v := range m {
		if marks(k) {
			tallied[k] = v
		} else {
			rest[k] = v
		}
	}
	return rest, tallied
}

// marksKindTime is the key of the line of `records diff --json` that says
// how long the marks of each side took (readAnswers keys the lines).
var marksKindTime = diffKey(map[string]any{"total": "kind", "kind": "marks"})

// marksHitRate reports whether k, the key of a line of `records diff
// --json`, is the hit rate of a mark: what a path tallied of the implicit
// marks it let go, which every path counts alike, to the nanosecond. The
// marks' kind time (marksKindTime) is no tally but the time the marks kept
// were open, the union of their intervals: a time each path places its
// own way, held within a microsecond as every kind's is (compareDiffs).
// Of two marks kept that overlap without nesting (two requests computing
// a key at once, the first to start ending first), the union runs from
// one's start to the other's end, so it holds how far apart each path
// placed their starts: the process on its monotonic clock, a gateway on
// the wall clock OTLP carries. time.Now reads the two clocks one after
// the other, so the same two starts lie some nanoseconds further apart
// on one than on the other (10 ns in a run of the cacheserver).
func marksHitRate(k string) bool {
	return strings.HasPrefix(k, `[null,"marks",`) && k != marksKindTime
}

// compareMarksTallied holds what two paths tallied of the implicit marks
// they let go to each other (the check "implicit marks tallied").
func compareMarksTallied(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if a[k] != b[k] {
			knownWrong(t, "implicit marks tallied", "%s: %s\n  %s\n  %s", what, k, orNone(a[k]), orNone(b[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			knownWrong(t, "implicit marks tallied", "%s: %s\n  (none)\n  %s", what, k, b[k])
		}
	}
}

// compareDumps holds b's sessions and records to a's: record for record
// (by trace and span id), field for field but the stamp, in the same
// order, at the same times from the session's first record.
func compareDumps(t *testing.T, pair string, a, b *fourPathAnswers) {
	for _, inst := range slices.Sorted(maps.Keys(a.sessions)) {
		if a.sessions[inst] != b.sessions[inst] {
			t.Errorf("%s: sessions --json: the session of %s differs:\n  %s\n  %s", pair, inst, a.sessions[inst], b.sessions[inst])
		}
		oa, ob := a.order[inst], b.order[inst]
		for i := range min(len(oa), len(ob)) {
			if oa[i] != ob[i] {
				knownWrong(t, "stamp order across traces", "%s: dump --json: the records of %s are stamped in another order: the %d-th is\n  %s\n  %s",
					pair, inst, i+1, a.describeAt(oa[i]), b.describeAt(ob[i]))
				break
			}
		}
	}
	// Each field that differs, in how many records, and one of them.
	type difference struct {
		n        int
		example  string
		from, to any
	}
	fields := map[string]*difference{}
	for _, span := range slices.Sorted(maps.Keys(a.records)) {
		if _, ok := b.records[span]; !ok {
			t.Errorf("%s: dump --json: only %s holds %s", pair, a.path.about, a.describeAt(span))
			continue
		}
		if a.records[span] == b.records[span] {
			continue
		}
		for _, f := range slices.Sorted(maps.Keys(a.fields[span])) {
			if canonical(a.fields[span][f]) != canonical(b.fields[span][f]) {
				d := fields[f]
				if d == nil {
					d = &difference{example: a.describeAt(span), from: a.fields[span][f], to: b.fields[span][f]}
					fields[f] = d
				}
				d.n++
			}
		}
	}
	for _, span := range slices.Sorted(maps.Keys(b.records)) {
		if _, ok := a.records[span]; !ok {
			t.Errorf("%s: dump --json: only %s holds %s", pair, b.path.about, b.describeAt(span))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		d := fields[f]
		t.Errorf("%s: dump --json: %q differs in %d of %d records, e.g. %s: %s vs %s", pair, f, d.n, len(a.records), d.example, canonical(d.from), canonical(d.to))
	}
	// When each record started, from its session's first record: the
	// same to the microsecond (the process reads its monotonic clock, a
	// gateway the nanoseconds since 1970 that OTLP carries).
	var worst time.Duration
	var at string
	for span, off := range a.offsets {
		if o, ok := b.offsets[span]; ok {
			if d := time.Duration(abs(o - off)); d > worst {
				worst, at = d, span
			}
		}
	}
	if worst > time.Microsecond {
		t.Errorf("%s: dump --json: offsets from the session's first record differ by up to %v, at %s: %v vs %v",
			pair, worst, a.describeAt(at), time.Duration(a.offsets[at]), time.Duration(b.offsets[at]))
	}
}

// compareDiffs holds b's lines of `records diff --json` to a's: its
// matches exactly, its times within what a path may place differently —
// a kind's time within a microsecond, and a session's duration, which
// runs from the instant its id names (up to 2^24 ns before its first
// record, drawn anew on each path: recorder.Stamp), within 2^24 ns.
func compareDiffs(t *testing.T, pair string, a, b map[string]string) {
	compareMaps(t, pair+": diff --json", a, alignTimes(a, b))
}

// alignTimes returns b with each of its times that is a's within what a
// path may place differently (compareDiffs) replaced by a's line.
func alignTimes(a, b map[string]string) map[string]string {
	type total struct {
		Total string
		A, B  struct {
			WallNs int64 `json:"wall_ns"`
		}
	}
	b = maps.Clone(b)
	for k, la := range a {
		lb, ok := b[k]
		var ta, tb total
		if !ok || la == lb || json.Unmarshal([]byte(la), &ta) != nil || json.Unmarshal([]byte(lb), &tb) != nil || ta.Total == "" {
			continue
		}
		tolerance := time.Microsecond
		if ta.Total == "duration" {
			tolerance = 1 << 24
		}
		if time.Duration(abs(ta.A.WallNs-tb.A.WallNs)) <= tolerance && time.Duration(abs(ta.B.WallNs-tb.B.WallNs)) <= tolerance {
			b[k] = la
		}
	}
	return b
}

func abs(n int64) int64 { return max(n, -n) }

func toStrings(m map[string]int) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = strconv.Itoa(v)
	}
	return out
}

// maxShown is how many differing entries compareMaps shows.
const maxShown = 6

// compareMaps reports the entries whose value differs between a and b:
// the first maxShown of them, and how many there are.
func compareMaps(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(a))
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	var differ []string
	for _, k := range keys {
		if a[k] != b[k] {
			differ = append(differ, k)
		}
	}
	for _, k := range differ[:min(len(differ), maxShown)] {
		t.Errorf("%s: %s\n  %s\n  %s", what, k, orNone(a[k]), orNone(b[k]))
	}
	if len(differ) > maxShown {
		t.Errorf("%s: and %d more entries differ", what, len(differ)-maxShown)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// describeAt names a record of the path for a message: its kind, name,
// instance, key and result, wall time and offset.
func (a *fourPathAnswers) describeAt(span string) string {
	rec := a.fields[span]
	attrs, _ := rec["attributes"].(map[string]any)
	wall, _ := strconv.ParseInt(fmt.Sprint(rec["wall_ns"]), 10, 64)
	return fmt.Sprintf("%v %q of %v (cache.key=%v result=%v, wall %v, at %v)", rec["kind"], rec["name"], rec["instance"],
		attrs["cache.key"], attrs["result"], time.Duration(wall), time.Duration(a.offsets[span]))
}

func whyText(lines []whyLine) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "    %s: %s | %s\n", l.Instance, l.Words, l.Rest)
	}
	return b.String()
}

// checkAnswers holds one path's answers to what the servers counted,
// view by view (a subtest each).
func checkAnswers(t *testing.T, a *fourPathAnswers, truth map[string]serverTruth) {
	t.Run("sessions", func(t *testing.T) {
		// A session row says which version of the service ran, whoever
		// recorded it; a session id reads the same in any JSON reader.
		for _, in := range fourPathInstances {
			if v := a.versions[in.id]; v != fourPathServiceVersion {
				t.Errorf("[issue 43 item 6] %s: records sessions shows VERSION %q for %s, which ran service.version %s", a.path.about, v, in.id, fourPathServiceVersion)
			}
		}
		for _, n := range a.numbers {
			t.Errorf("[issue 43 item 5] %s: a session id above 2^53 printed as a JSON number: %s", a.path.about, n)
		}
	})
	t.Run("why", func(t *testing.T) { checkWhy(t, a, truth) })
	t.Run("cost", func(t *testing.T) { checkCost(t, a, truth) })
	t.Run("diff", func(t *testing.T) { checkDiff(t, a, truth) })
	t.Run("report", func(t *testing.T) { checkReport(t, a, truth) })
}

// checkHits checks a count of hits: a path that keeps by trace stores
// none (their traces changed nothing) until the tallies of issue 46 count
// them.
func checkHits(t *testing.T, a *fourPathAnswers, what string, got, want int) {
	t.Helper()
	switch {
	case got == want:
	case a.path.byTrace && got == 0:
		knownWrong(t, "hits kept by trace", "%s: %s: %d hits, the server counted %d", a.path.about, what, got, want)
	default:
		t.Errorf("[issue 43 item 2] %s: %s: %d hits, the server counted %d", a.path.about, what, got, want)
	}
}

// checkWhy: every lookup that hit is observed; every other record is
// work, and says what it did (a lookup of the first shape changed, one of
// the second missed, the compute inside it changed): the first of a key
// in the fleet is new, another instance's first is new there, the second
// of two computes at once raced (the one that started later, while the
// other still ran), and only the compute of a key the cache dropped was
// forgotten.
func checkWhy(t *testing.T, a *fourPathAnswers, truth map[string]serverTruth) {
	for _, q := range whyQueries {
		kind, key := q[0], q[1]
		lines := a.why[kind+" "+key]
		got := map[string]map[string]int{}
		tallied := map[string]int{} // hits the tallies counted, by instance
		for _, l := range lines {
			if l.Cause == causeTallied {
				tallied[l.Instance] += l.Hits
				continue
			}
			if got[l.Instance] == nil {
				got[l.Instance] = map[string]int{}
			}
			got[l.Instance][l.Cause]++
			if strings.Contains(l.Words, "cache lost it") && l.Cause != causeForgotten {
				t.Errorf("%s: why %s cache.key=%s says the cache lost what %s did not: %q", a.path.about, kind, key, l.Reason, l.Words)
			}
			verdict, inside := "changed", ""
			switch {
			case l.Cause == causeObserved:
				verdict = "hit"
			case kind == "cache" && renderKey(key):
				verdict, inside = "missed", "compute"
			}
			if l.Verdict != verdict || l.Inside != inside {
				t.Errorf("[issue 43 item 2] %s: why %s cache.key=%s: a record of %s %s has verdict %s (inside %q); want %s (inside %q)\n%s",
					a.path.about, kind, key, l.Instance, l.Cause, l.Verdict, l.Inside, verdict, inside, whyText(lines))
			}
		}
		for i, in := range fourPathInstances {
			want := wantCauses(truth[in.id].Keys[key], kind, i == 0, a.path.byTrace)
			if kind == "cache" {
				// Hits kept and tallied: every hit the server counted.
				checkHits(t, a, fmt.Sprintf("why %s cache.key=%s of %s: hits kept and tallied", kind, key, in.id), got[in.id][causeObserved]+tallied[in.id], truth[in.id].Keys[key].Hits)
			}
			if maps.Equal(got[in.id], want) {
				continue
			}
			var items []string
			for _, cause := range slices.Sorted(maps.Keys(want)) {
				if got[in.id][cause] != want[cause] {
					items = append(items, causeItem[cause])
				}
			}
			t.Errorf("[issue 43 item %s] %s: why %s cache.key=%s, the records of %s: %v; the server's counts say %v\n%s",
				strings.Join(slices.Compact(items), "; "), a.path.about, kind, key, in.id, got[in.id], want, whyText(lines))
		}
		// Of two computes at once, the one that started later raced:
		// the one it raced with started before it and still ran.
		for _, l := range lines {
			if l.Cause != causeRaced {
				continue
			}
			_, ok := a.records[l.Previous]
			switch {
			case !ok:
				t.Errorf("[issue 43 item 4] %s: why %s cache.key=%s: a record of %s raced no record the path holds (%q)\n%s",
					a.path.about, kind, key, l.Instance, l.Previous, whyText(lines))
			case a.offsets[l.Previous] > a.offsets[l.Span]:
				t.Errorf("[issue 43 item 4] %s: why %s cache.key=%s: the record said to have raced started %v before the one it raced with\n%s",
					a.path.about, kind, key, time.Duration(a.offsets[l.Previous]-a.offsets[l.Span]), whyText(lines))
			case a.offsets[l.Previous]+a.wall(l.Previous) <= a.offsets[l.Span]:
				t.Errorf("[issue 43 item 4] %s: why %s cache.key=%s: the record said to have raced started after the one it raced with had ended: %s\n%s",
					a.path.about, kind, key, a.describeAt(l.Previous), whyText(lines))
			}
		}
	}
}

// wall returns how long the record span ran.
func (a *fourPathAnswers) wall(span string) int64 {
	w, _ := strconv.ParseInt(fmt.Sprint(a.fields[span]["wall_ns"]), 10, 64)
	return w
}

// causeItem is the item of issue 43 a wrong count of a cause falls under.
var causeItem = map[string]string{
	causeObserved: "2 (hits read as work)", causeNew: "3 (another instance)",
	causeAnother: "3 (another instance)", causeRaced: "4 (raced)", causeForgotten: "2-4 (forgotten)",
}

// wantCauses is what why must say of an instance's records of a key of
// kind, from what the instance counted; first says it is the fleet's
// first instance to look keys up. Every miss is work, in either shape
// (a lookup that changed, or inside which a compute changed): the
// instance's first is new (new here, on another instance), then raced
// or forgotten as the server counted; every hit is observed. A path
// that keeps by trace keeps no hit.
func wantCauses(c keyCounts, kind string, first, byTrace bool) map[string]int {
	want := map[string]int{}
	add := func(cause string, n int) {
		if n > 0 {
			want[cause] += n
		}
	}
	switch {
	case c.Misses > 0 && first:
		add(causeNew, 1)
	case c.Misses > 0:
		add(causeAnother, 1)
	}
	add(causeRaced, c.Raced)
	add(causeForgotten, c.Evicted)
	if kind == "cache" && !byTrace {
		add(causeObserved, c.Hits)
	}
	return want
}

// checkCost: per key, the records are what the server counted, and each
// column can be checked against the cache's own counters: TIMES (records)
// = HITS + MISSES; HITS and MISSES are the server's hits and misses of
// the key, summed over instances (a compute is a miss: a record that was
// not a hit); of the misses, RACED are the server's raced, REDONE the
// misses of a key the instance's cache had and lost (evicted), NEW_HERE
// the first miss of each instance after the first, and the one left the
// first of the key in the store: MISSES = 1 + NEW_HERE + RACED + REDONE.
func checkCost(t *testing.T, a *fourPathAnswers, truth map[string]serverTruth) {
	p := a.path.about
	for _, q := range whyQueries {
		kind, key := q[0], q[1]
		var hit, miss, raced, evicted, missedOn int
		for _, in := range fourPathInstances {
			c := truth[in.id].Keys[key]
			hit, miss, raced, evicted = hit+c.Hits, miss+c.Misses, raced+c.Raced, evicted+c.Evicted
			if c.Misses > 0 {
				missedOn++
			}
		}
		name, wantHits := "lookup", hit
		if kind == "compute" {
			name, wantHits = "compute", 0 // the computes of the misses
		}
		row := a.costRow(t, kind, name, key)
		if row == nil {
			t.Errorf("%s: cost --json has no row for %s %s cache.key=%s", p, kind, name, key)
			continue
		}
		n := func(f string) int { v, _ := strconv.Atoi(fmt.Sprint(row[f])); return v }
		wantRecords := wantHits + miss
		if a.path.byTrace {
			// Hits are not kept, but tallied (issue 46): records kept
			// and tallied, whatever cost counts of hits (checkHits).
			wantRecords = n("hits") + miss
		}
		what := fmt.Sprintf("cost of %s cache.key=%s", kind, key)
		for _, c := range []struct {
			field string
			want  int
			means string
		}{
			{"records", wantRecords, "records, want"},
			{"misses", miss, "misses (TIMES = HITS + MISSES), the server counted"},
			{"raced", raced, "raced, the server counted"},
			{"redone", evicted, "redone (lost by the cache), the server counted evicted"},
			{"new_here", missedOn - 1, "new here (another instance's first miss), want one per instance but the first:"},
		} {
			if got := n(c.field); got != c.want {
				t.Errorf("[issue 43 items 2-4] %s: %s: %d %s %d", p, what, got, c.means, c.want)
			}
		}
		checkHits(t, a, what, n("hits"), wantHits)
		if n("records") != n("hits")+n("misses") {
			t.Errorf("%s: %s: %d records, %d hits and %d misses: want records = hits + misses", p, what, n("records"), n("hits"), n("misses"))
		}
		if n("misses") != 1+n("new_here")+n("raced")+n("redone") {
			t.Errorf("%s: %s: %d misses, %d new here, %d raced, %d redone: want misses = 1 new + new here + raced + redone", p, what, n("misses"), n("new_here"), n("raced"), n("redone"))
		}
	}
}

// checkDiff: in the diff of the first two instances' sessions, each
// side's lookups of a key, by what they did, are what that instance
// counted.
func checkDiff(t *testing.T, a *fourPathAnswers, truth map[string]serverTruth) {
	for _, key := range []string{"k1", "k2", "k3", "p1"} {
		for _, did := range []string{"changed", "missed", "hit"} {
			got := a.diffCounts(key, "cache", did)
			for i, in := range fourPathInstances[:2] {
				c, want := truth[in.id].Keys[key], 0
				switch {
				case did == "hit":
					checkHits(t, a, fmt.Sprintf("diff: the lookups of %s by %s", key, in.id), got[i], c.Hits)
					continue
				case (did == "missed") == renderKey(key):
					want = c.Misses
				}
				if got[i] != want {
					t.Errorf("[issue 43 item 2] %s: diff: %d lookups of %s by %s %s, the server counted %d", a.path.about, got[i], key, in.id, did, want)
				}
			}
		}
	}
}

// checkReport: the report of each instance's session shows its lookups
// by what they did, per key and in all; its computes; a request (a mark)
// for each lookup.
func checkReport(t *testing.T, a *fourPathAnswers, truth map[string]serverTruth) {
	for _, in := range fourPathInstances {
		r := a.reports[in.id]
		want := map[string]int{}
		hits := 0
		for key, c := range truth[in.id].Keys {
			hits += c.Hits
			kept := c.Hits
			if a.path.byTrace {
				kept = 0
			}
			want["cache records"] += c.Misses + kept
			want["marks records"] += c.Misses + kept
			want["cache hits"] += kept
			want["cache "+key+" hit"] = kept
			if renderKey(key) {
				want["cache missed"] += c.Misses
				want["cache "+key+" missed"] = c.Misses
				want["compute records"] += c.Misses
				want["compute changed"] += c.Misses
				want["compute "+key+" changed"] = c.Misses
			} else {
				want["cache changed"] += c.Misses
				want["cache "+key+" changed"] = c.Misses
			}
		}
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if r[k] != want[k] {
				t.Errorf("[issue 43 item 2] %s: the report of %s says %q %d, the server counted %d", a.path.about, in.id, k, r[k], want[k])
			}
		}
		// Hits kept and tallied: every hit the server counted.
		checkHits(t, a, "the report of "+in.id+": lookups kept and tallied that hit", r["cache hits"]+r["cache tallied"], hits)
	}
}

// costRow returns cost's row of a kind, name and key, or nil.
func (a *fourPathAnswers) costRow(t *testing.T, kind, name, key string) map[string]any {
	t.Helper()
	s, ok := a.cost[canonical([]any{"redone", kind, name, map[string]any{"cache.key": key}, nil, nil})]
	if !ok {
		return nil
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(s), &row); err != nil {
		t.Fatal(err)
	}
	return row
}

// diffCounts returns count_a and count_b of the diff's matches of kind's
// lookups of key with the verdict did; of hits, with those the sessions'
// tallies counted (a line of hit rates, issue 46).
func (a *fourPathAnswers) diffCounts(key, kind, did string) [2]int {
	var out [2]int
	type side struct {
		Tallied int `json:"tallied"`
	}
	for _, s := range a.diff {
		var l struct {
			Kind    string            `json:"kind"`
			Key     map[string]string `json:"key"`
			Verdict *string           `json:"verdict"`
			CountA  int               `json:"count_a"`
			CountB  int               `json:"count_b"`
			HitRate *string           `json:"hit_rate"`
			A, B    side
		}
		if json.Unmarshal([]byte(s), &l) != nil || l.Kind != kind || l.Key["cache.key"] != key {
			continue
		}
		switch {
		case l.HitRate != nil && did == "hit":
			out[0], out[1] = out[0]+l.A.Tallied, out[1]+l.B.Tallied
		case l.Verdict != nil && *l.Verdict == did:
			out[0], out[1] = out[0]+l.CountA, out[1]+l.CountB
		}
	}
	return out
}
