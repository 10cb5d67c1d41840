package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// tallyStart is when the first session of writeTallyStore starts, by
// default.
var tallyStart = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// writeTallyStore writes four sessions of a cache's lookups (kind cache,
// name get, key cache.key), and the tallies of the last three, by hand,
// as a recorder that lets hits go writes them (in place of those the
// recorder wrote), and returns the store and
// the sessions' ids:
//
//	0 (no tally: an older writer): k1 missed (filled)
//	1 missed k3: k3 missed, k1 hit (kept); tallied k1 5 hits
//	2 only hit k3: k2 missed; tallied k3 12 hits (2µs each), k1 7 hits
//	3 never looked k3 up: k2 missed; tallied k1 3 hits, and 2 records of
//	  kind resolve, which it kept none of
func writeTallyStore(t *testing.T, start time.Time) (string, []sessions.SessionID) {
	t.Helper()
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	dir := filepath.Join(t.TempDir(), "tally")
	type get struct {
		key string
		hit bool
	}
	runs := [][]get{{{"k1", false}}, {{"k3", false}, {"k1", true}}, {{"k2", false}}, {{"k2", false}}}
	for i, gets := range runs {
		at := start.Add(time.Duration(i) * time.Hour)
		record(t, dir, at, "server", nil, func(rec *testsupport.Session) {
			for j, g := range gets {
				effect := sessions.Changed
				if g.hit {
					effect = sessions.Observed
				}
				rec.Put("cache", effect, rec.Stamp(at.Add(time.Duration(j)*time.Millisecond)), sessions.Record{
					Name: "get", Wall: 3 * time.Millisecond, SpanKind: "internal", Attributes: sessions.Attrs{str("cache.key", g.key)},
					TraceID: testTraceID(uint64(j + 1)), SpanID: testSpanID(uint64(j + 1)),
				})
			}
		})
	}
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []sessions.SessionID
	for s, err := range sessions.NewRecords(st).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if len(ids) != 4 {
		t.Fatalf("%d sessions, want 4", len(ids))
	}
	hits := func(key string, n int, d time.Duration) tallies.Entry {
		e := tallies.Entry{Kind: "cache", Name: "get", Key: sessions.Attrs{str("cache.key", key)}}
		for range n {
			e.Add(d, "hit")
		}
		return e
	}
	resolves := tallies.Entry{Kind: "resolve", Name: "resolve"} // a kind kept no record of
	resolves.Add(5*time.Microsecond, "")
	resolves.Add(7*time.Microsecond, "")
	parts := []tallies.Tally{
		{Session: ids[1], Part: 1, Entries: []tallies.Entry{hits("k1", 5, time.Microsecond)}},
		{Session: ids[2], Part: 1, Entries: []tallies.Entry{hits("k1", 7, time.Microsecond), hits("k3", 12, 2*time.Microsecond)}},
		{Session: ids[3], Part: 1, Entries: []tallies.Entry{hits("k1", 3, time.Microsecond), resolves}},
	}
	// The recorder wrote tallies of its own (of nothing let go): these
	// stand for them, and session 0's goes, as an older writer wrote none.
	for _, id := range ids {
		prefix := keys.TallyPrefix(uint64(id))
		end := append(slices.Clone(prefix[:len(prefix)-1]), prefix[len(prefix)-1]+1)
		if _, err := st.DeleteRange(prefix, end, nil); err != nil {
			t.Fatal(err)
		}
	}
	var entries []sessions.Entry
	for _, tl := range parts {
		slices.SortFunc(tl.Entries, tallies.Entry.Compare)
		v, err := tl.MarshalCBOR()
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, sessions.Entry{Key: keys.Tally(uint64(tl.Session), tl.Part), Value: v})
	}
	if err := st.Write(entries); err != nil {
		t.Fatal(err)
	}
	return dir, ids
}

// vals prints values as fmt.Sprintln does, without its newline: a space
// between any two.
func vals(v ...any) string { return strings.TrimSpace(fmt.Sprintln(v...)) }

// row returns the line of out that holds every one of words, or "".
func row(out string, words ...string) string {
	for line := range strings.Lines(out) {
		if !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(line, w) }) {
			return line
		}
	}
	return ""
}

// jsonRow returns the first object of lines whose fields have the values
// given as text, or nil.
func jsonRow(lines []map[string]any, fields map[string]string) map[string]any {
	for _, l := range lines {
		ok := true
		for k, v := range fields {
			if fmt.Sprint(l[k]) != v {
				ok = false
			}
		}
		if ok {
			return l
		}
	}
	return nil
}

// Cost counts a key's tallied hits with its kept records: TIMES = HITS +
// MISSES still, and says which sessions keep no tally.
func TestCostCountsTallies(t *testing.T) {
	dir, _ := writeTallyStore(t, tallyStart)
	out := mustRun(t, "cost", "--dir", dir)
	// k3: one kept miss, 12 tallied hits; k1: a kept miss, a kept hit, 15 tallied.
	if r := row(out, "cache.key=k3"); !regexp.MustCompile(`\b13\s+2\s.*\s12 \(12 tallied\)\s+24µs\s+1\s*$`).MatchString(r) {
		t.Errorf("cost's row of k3 is %q, want 13 times, 2 sessions, 12 (12 tallied) hits in 24µs, 1 miss\n%s", r, out)
	}
	if r := row(out, "cache.key=k1"); !strings.Contains(r, " 16 (15 tallied) ") {
		t.Errorf("cost's row of k1 is %q, want 16 (15 tallied) hits", r)
	}
	if !strings.Contains(out, "1 of 4 sessions keep no tally of what they let go") {
		t.Errorf("cost does not say a session keeps no tally:\n%s", out)
	}
	lines := decodeLines(t, mustRun(t, "cost", "--json", "--dir", dir))
	k3 := jsonRow(lines, map[string]string{"table": "redone", "key": "map[cache.key:k3]"})
	if k3 == nil || vals(k3["records"], k3["hits"], k3["tallied"], k3["tallied_ns"], k3["misses"]) != "13 12 12 24000 1" {
		t.Errorf("cost --json's row of k3 is %v, want records 13, hits 12, tallied 12 in 24000ns, misses 1", k3)
	}
	if tl := jsonRow(lines, map[string]string{"table": "tallies"}); tl == nil || vals(tl["sessions"], tl["untallied"], tl["over"]) != "4 1 0" {
		t.Errorf("cost --json's tallies are %v, want 4 sessions, 1 untallied", tl)
	}
}

// Many stores read as one sum their sessions' tallies.
func TestCostTalliesOfStoresAsOne(t *testing.T) {
	a, _ := writeTallyStore(t, tallyStart)
	b, _ := writeTallyStore(t, tallyStart.Add(24*time.Hour))
	lines := decodeLines(t, mustRun(t, "cost", "--json", "--dir", a, "--dir", b))
	k3 := jsonRow(lines, map[string]string{"table": "redone", "key": "map[cache.key:k3]"})
	if k3 == nil || vals(k3["records"], k3["hits"], k3["tallied"], k3["sessions"]) != "26 24 24 4" {
		t.Errorf("cost --json of two stores: k3 is %v, want records 26, hits 24, tallied 24, sessions 4", k3)
	}
}

// A diff of a run that only hit k3 against one that missed it says so in
// words, and a run that never looked k3 up is told apart; each key's hit
// rates and hit times are compared.
func TestDiffTellsOnlyHitFromNotLookedUp(t *testing.T) {
	dir, ids := writeTallyStore(t, tallyStart)
	diff := func(a, b sessions.SessionID, more ...string) string {
		return mustRun(t, append([]string{"diff", "--dir", dir, "--session", a.String(), "--against-session", b.String()}, more...)...)
	}
	out := diff(ids[1], ids[2])
	if r := row(out, "-", "cache.key=k3"); !strings.Contains(r, "B only hit it: 12 hits, tallied") {
		t.Errorf("diff of a run that missed k3 against one that only hit it: k3's row is %q\n%s", r, out)
	}
	if r := row(out, "cache.key=k3", "12/12 100%, 12 tallied"); !strings.Contains(r, "0/1 0%") || !strings.Contains(r, "2µs") {
		t.Errorf("diff's hit rates of k3 are %q, want 0/1 0%% on A, 12/12 100%%, 12 tallied on B, in 2µs", r)
	}
	if r := row(out, "cache.key=k1", "6/6 100%, 5 tallied", "7/7 100%, 7 tallied"); r == "" {
		t.Errorf("diff's hit rates of k1: no row with 6/6 (5 tallied) on A and 7/7 (7 tallied) on B\n%s", out)
	}
	if r := row(diff(ids[2], ids[1]), "+", "cache.key=k3"); !strings.Contains(r, "A only hit it: 12 hits, tallied") {
		t.Errorf("diff the other way: k3's row is %q, want A only hit it", r)
	}
	out = diff(ids[1], ids[3])
	if r := row(out, "-", "cache.key=k3"); !strings.Contains(r, "not done or looked up in B (no record, no tally)") {
		t.Errorf("diff against a run that never looked k3 up: k3's row is %q\n%s", r, out)
	}
	if strings.Contains(out, "only hit it: 12") {
		t.Errorf("diff against a run that never looked k3 up says it hit:\n%s", out)
	}
	lines := decodeLines(t, diff(ids[1], ids[2], "--json"))
	if k := jsonRow(lines, map[string]string{"change": "only_in_a", "key": "map[cache.key:k3]"}); k == nil || vals(k["tallied_a"], k["tallied_b"]) != "0 12" {
		t.Errorf("diff --json: k3's match is %v, want tallied_a 0, tallied_b 12", k)
	}
	h := jsonRow(lines, map[string]string{"hit_rate": "key", "key": "map[cache.key:k3]"})
	if h == nil || fmt.Sprint(h["a"]) != "map[hits:0 looked_up:true mean_hit_ns:0 median_hit_ns:0 misses:1 tallied:0 tallied_ns:0]" ||
		fmt.Sprint(h["b"]) != "map[hits:12 looked_up:true mean_hit_ns:2000 median_hit_ns:2000 misses:0 tallied:12 tallied_ns:24000]" {
		t.Errorf("diff --json: k3's hit rate is %v", h)
	}
	if tl := jsonRow(lines, map[string]string{"tallies": "sessions"}); tl == nil || vals(tl["a"], tl["b"]) != "map[over:0 sessions:1 untallied:0] map[over:0 sessions:1 untallied:0]" {
		t.Errorf("diff --json: tallies %v", tl)
	}
	// Against the session of an older writer, no tally: nothing is said
	// not looked up, and the view says what it counts.
	out = diff(ids[1], ids[0])
	if strings.Contains(out, "looked up in B") || !strings.Contains(out, "B keeps no tally of what it let go") {
		t.Errorf("diff against a session with no tally:\n%s", out)
	}
}

// Why of a key says how often each session hit it without keeping a
// record, and how long the hits took.
func TestWhySaysTalliedHits(t *testing.T) {
	dir, ids := writeTallyStore(t, tallyStart)
	out := mustRun(t, "why", "--dir", dir, "cache", "cache.key=k3")
	if r := row(out, ids[2].String()); !strings.Contains(r, "hit 12 times, let go (tallied): median 2µs, mean 2µs, 2µs to 2µs") {
		t.Errorf("why of k3: session %s's line is %q\n%s", ids[2], r, out)
	}
	if strings.Index(out, ids[1].String()) > strings.Index(out, ids[2].String()) {
		t.Errorf("why of k3: sessions out of order\n%s", out)
	}
	lines := decodeLines(t, mustRun(t, "why", "--dir", dir, "cache", "cache.key=k3", "--json"))
	w := jsonRow(lines, map[string]string{"session": ids[2].String()})
	if w == nil || vals(w["tallied"], w["wall_ns"], w["median_ns"], w["outcomes"]) != "12 24000 2000 map[hit:12]" {
		t.Errorf("why --json of k3: session %s is %v", ids[2], w)
	}
	// A key only tallied, never kept, is no error: k1 of session 3.
	if out := mustRun(t, "why", "--dir", dir, "cache", "cache.key=k1"); row(out, ids[3].String(), "hit 3 times") == "" {
		t.Errorf("why of k1 does not say session %s hit it 3 times:\n%s", ids[3], out)
	}
}

// Why of a key of a kind no kept record has, only tallies (a server kept
// by trace, whose lookups all hit and were let go), says how often each
// session hit it; a kind neither kept nor tallied is named as missing,
// with the kinds there are.
func TestWhyOfAKindOnlyTallied(t *testing.T) {
	dir, ids := writeTallyStore(t, tallyStart)
	e := tallies.Entry{Kind: "dns", Name: "resolve", Key: sessions.Attrs{str("dns.key", "example.com")}}
	for range 4 {
		e.Add(3*time.Microsecond, "hit")
	}
	e.Add(5*time.Microsecond, "miss") // a lookup that changed nothing, though the cache said miss
	tl := tallies.Tally{Session: ids[3], Part: 2, Entries: []tallies.Entry{e}}
	v, err := tl.MarshalCBOR()
	if err != nil {
		t.Fatal(err)
	}
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Write([]sessions.Entry{{Key: keys.Tally(uint64(ids[3]), 2), Value: v}})
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "why", "--dir", dir, "dns", "dns.key=example.com")
	// The text says the results its JSON counts: one of the 5 said miss.
	if r := row(out, ids[3].String()); code != 0 || !strings.Contains(r, "hit 5 times, let go (tallied)") || !strings.HasSuffix(r, "; results: hit=4 miss=1\n") {
		t.Errorf("why of a key only tallied: exit %d, stderr %q, stdout\n%s\nwant session %s's 5 tallied hits, and their results", code, errOut, out, ids[3])
	}
	code, out, errOut = runCLI(t, "why", "--dir", dir, "dnz", "dns.key=example.com")
	if want := "records: the store has no records of kind dnz; its kinds are: cache (and let go, tallied: dns, resolve)\n"; code != 1 || out != "" || errOut != want {
		t.Errorf("why of a kind neither kept nor tallied: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, want)
	}
	// Of an attribute tallies do not keep, records let go cannot be told
	// apart: the error does not say no tally had it.
	code, out, errOut = runCLI(t, "why", "--dir", dir, "cache", "cache.result=miss")
	if want := "records: no record of kind cache has cache.result=miss; of the records let go, tallies keep only key and *.key attributes, so cannot tell\n"; code != 1 || out != "" || errOut != want {
		t.Errorf("why of an attribute tallies do not keep: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, out, errOut, want)
	}
	// show and dump list kept records only: of a kind only tallied they
	// say where its records went, rather than that there were none.
	for _, args := range [][]string{{"show", "dns"}, {"dump", "--kind", "dns"}} {
		code, out, errOut := runCLI(t, append(args, "--dir", dir)...)
		if want := "records: the store keeps no record of kind dns: its sessions let them go, and counted them in their tallies (records cost and records why count them)\n"; code != 1 || out != "" || errOut != want {
			t.Errorf("%v of a kind only tallied: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, out, errOut, want)
		}
	}
}

// Summary shows each kind's hit rate, kept and tallied hits together, and
// says which sessions have no tally.
func TestSummaryHitRates(t *testing.T) {
	dir, ids := writeTallyStore(t, tallyStart)
	out := mustRun(t, "summary", "--dir", dir)
	for id, want := range map[sessions.SessionID]string{ids[0]: "no tally", ids[1]: "cache=6/7(86%)", ids[2]: "cache=19/20(95%)"} {
		if r := row(out, id.String()); !strings.Contains(r, want) {
			t.Errorf("summary's row of %s is %q, want %q", id, r, want)
		}
	}
	lines := decodeLines(t, mustRun(t, "summary", "--dir", dir, "--json"))
	s := jsonRow(lines, map[string]string{"id": ids[2].String()})
	if s == nil || vals(s["hits"], s["tallied"]) != "map[cache:map[hits:19 misses:1 tallied:19 tallied_ns:31000]] true" {
		t.Errorf("summary --json of %s: %v", ids[2], s)
	}
	if s := jsonRow(lines, map[string]string{"id": ids[0].String()}); s == nil || s["tallied"] != false {
		t.Errorf("summary --json of a session with no tally: %v", s)
	}
}

// The report shows each kind's tallied hits and hit rate.
func TestReportHitRates(t *testing.T) {
	dir, ids := writeTallyStore(t, tallyStart)
	page := mustRun(t, "report", "--dir", dir, "--session", ids[2].String())
	if !strings.Contains(page, "0 + 19 tallied (median 1.54µs)") || !strings.Contains(page, "19/20 (95%)") {
		t.Errorf("the report of session %s does not show 19 tallied hits of 20 lookups", ids[2])
	}
	// A kind the session kept no record of, only tallied: a row of the
	// summary, with no section of its own and not in the timeline's legend.
	page = mustRun(t, "report", "--dir", dir, "--session", ids[3].String())
	if !strings.Contains(page, "</span>resolve</td><td class=\"n\">0</td>") || !strings.Contains(page, "0 + 2 tallied") ||
		strings.Contains(page, "kind-1") || strings.Contains(page, "</span>resolve </div>") {
		t.Errorf("the report of session %s does not show kind resolve, only tallied, as a row of its own", ids[3])
	}
	if old := mustRun(t, "report", "--dir", dir, "--session", ids[0].String()); !strings.Contains(old, "This session keeps no tally") {
		t.Errorf("the report of a session with no tally does not say so")
	}
}

// records serve's diff reads the tallies as records diff does: its JSON
// is the command's, and its page says a key B only hit, and hit rates.
func TestServeDiffReadsTallies(t *testing.T) {
	dir, ids := writeTallyStore(t, tallyStart)
	base := startServe(t, dir)
	want := mustRun(t, "diff", "--dir", dir, "--session", ids[1].String(), "--against-session", ids[2].String(), "--json")
	if got := get(t, base, "/api/diff?a="+ids[1].String()+"&b="+ids[2].String()); got != want {
		t.Errorf("serve's diff JSON:\n%s\nrecords diff --json:\n%s", got, want)
	}
	page := get(t, base, "/diff?a="+ids[1].String()+"&b="+ids[2].String())
	for _, w := range []string{"B only hit it: 12 hits, tallied", "12/12 100%, 12 tallied", "<h2>Hits</h2>"} {
		if !strings.Contains(page, w) {
			t.Errorf("serve's diff page does not say %q", w)
		}
	}
}

// Serve's history of a key says what each session tallied of it, as
// records why does: its JSON is why --json's lines, tallies included, and
// its page lists a key only tallied rather than no record at all (the
// cost page links every key there, tallied hits and all).
func TestServeWhyReadsTallies(t *testing.T) {
	dir, ids := writeTallyStore(t, tallyStart)
	base := startServe(t, dir)
	for _, k := range []string{"k3", "k1"} {
		want := mustRun(t, "why", "--dir", dir, "cache", "cache.key="+k, "--json")
		if got := get(t, base, "/api/why?kind=cache&key=cache.key&value="+k); got != want {
			t.Errorf("serve's why JSON of %s:\n%s\nrecords why --json:\n%s", k, got, want)
		}
	}
	page := get(t, base, "/why?kind=cache&key=cache.key&value=k3")
	for _, w := range []string{"/sessions/" + ids[2].String() + "\"", "hit 12 times, let go (tallied)", "1 record, and 12 hits let go and tallied"} {
		if !strings.Contains(page, w) {
			t.Errorf("serve's why page of k3 does not say %q", w)
		}
	}
}
