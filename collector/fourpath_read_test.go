package collector

// What the four-path test (fourpath_test.go) reads on each path: the
// records command's answers, in JSON where it has JSON, with what differs
// by path by design (session ids, seqs, where a session starts) taken
// out.

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The causes `records why --json` gives (explain.Cause), as the test
// tells them apart: the test takes a record for "new here, another
// instance" when its words say "another instance" (and its reason is not
// forgotten), whatever its JSON reason (new_here).
const (
	causeNew       = "new"
	causeObserved  = "observed"
	causeForgotten = "forgotten"
	causeRaced     = "raced"
	causeAnother   = "another instance" // new here: another instance computed it, with a cache of its own
	// causeTallied is the test's name for a line of why that is no
	// record: what a session's tally counted of the key (issue 46).
	causeTallied = "tallied"
)

// knownWrongChecks are the checks of this test whose answer is known to
// be wrong until the fix named is built: a failure of one is logged
// (KNOWN WRONG), not failed, so that the test is green otherwise. When
// the fix lands, delete its entry here: the check then fails the test as
// any other does.
var knownWrongChecks = map[string]string{
	// In process, a session's seqs follow the order its spans started.
	// Through the Collector the importer (importer/importtraces.go)
	// stamps a trace's spans by start only within one trace's settle;
	// across traces, seq follows the order the traces' roots reached the
	// gateway: of two concurrent requests, the one that started later
	// can be stamped first. The answers do not depend on it (explain
	// judges a session's records in the order they started); dump's seq
	// order does.
	"stamp order across traces": "the importer stamps across traces in start order without costing the processor (importer/importtraces.go; a heap across traces cost the warm processor 25%, reverted)",
}

// knownWrongSeen are the known-wrong checks that found a wrong answer in
// this run.
var knownWrongSeen sync.Map

// knownWrong reports a wrong answer found by the named check: an error,
// unless the check is known to be wrong (knownWrongChecks).
func knownWrong(t *testing.T, check, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if until, ok := knownWrongChecks[check]; ok {
		knownWrongSeen.Store(check, true)
		t.Logf("KNOWN WRONG [%s] until %s is built: %s", check, until, msg)
		return
	}
	t.Errorf("[%s] %s", check, msg)
}

// logKnownWrong says which known-wrong checks found nothing wrong in this
// run: when one never does, run after run, its fix has landed.
func logKnownWrong(t *testing.T) {
	for _, check := range slices.Sorted(maps.Keys(knownWrongChecks)) {
		if _, ok := knownWrongSeen.Load(check); !ok {
			t.Logf("known-wrong check [%s] found nothing wrong in this run: if it never does, %s is built; delete its entry in knownWrongChecks", check, knownWrongChecks[check])
		}
	}
}

// whyQueries are the keys `why` is asked about: each lookup key, and
// the compute of the second shape.
var whyQueries = [][2]string{{"cache", "k1"}, {"cache", "k2"}, {"cache", "k3"}, {"cache", "p1"}, {"compute", "p1"}}

// renderKey reports whether key is looked up in the second shape (an
// observed lookup enclosing a changed compute).
func renderKey(key string) bool { return strings.HasPrefix(key, "p") }

// fourPathAnswers is what the records command says on one path, with
// session ids replaced by the instance they record and records named by
// their trace and span ids: what may be compared between paths.
type fourPathAnswers struct {
	path     fourPathStore
	sessions map[string]string         // instance: its session row, less what differs by path
	records  map[string]string         // "trace/span": the record, less what differs by path
	fields   map[string]map[string]any // "trace/span": the record's fields, for messages
	order    map[string][]string       // instance: its records' "trace/span" in seq order
	offsets  map[string]int64          // "trace/span": its offset from its session's first record
	why      map[string][]whyLine      // "kind key": why's lines
	cost     map[string]string         // a cost row's kind, name and key (or parent and child): the row
	diff     map[string]string         // a diff line's match (or total): the line
	reports  map[string]map[string]int // instance: the report's numbers
	ids      map[string]string         // session id: instance
	stamp    map[[2]string]string      // session id, seq: "trace/span"
	versions map[string]string         // instance: the VERSION column of `records sessions`
	numbers  []string                  // where a session id was printed as a JSON number
}

// whyLine is one line of `records why --json`, as the test compares it.
type whyLine struct {
	Instance string
	Span     string // "trace/span"
	Cause    string // the test's reading: causeNew, ..., causeAnother
	Reason   string // the JSON reason
	Verdict  string // the JSON verdict: changed, missed or hit
	Inside   string // of a miss, the kind of the record inside that changed
	Previous string // the record compared with, "trace/span"; "" for none
	Words    string // the text line's WHY column, seqs read as "<trace/span>"
	Rest     string // the other fields, canonical JSON
	Hits     int    // of a tally's line (causeTallied): the hits it counts
}

// recordsJSON runs the records command and decodes each line of its
// output, numbers kept as written.
func recordsJSON(t *testing.T, bin string, args []string) []map[string]any {
	t.Helper()
	out := records(t, bin, args...)
	var lines []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("records %s: %v\n%s", strings.Join(args, " "), err, cut(out))
		}
		lines = append(lines, m)
	}
	return lines
}

// canonical is v as JSON, map keys sorted.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// readAnswers asks the records command everything the test compares, on
// the path p.
func readAnswers(t *testing.T, bin string, p fourPathStore, truth map[string]serverTruth) *fourPathAnswers {
	t.Helper()
	a := &fourPathAnswers{path: p, sessions: map[string]string{}, records: map[string]string{}, fields: map[string]map[string]any{},
		order: map[string][]string{}, offsets: map[string]int64{}, why: map[string][]whyLine{}, cost: map[string]string{}, diff: map[string]string{},
		reports: map[string]map[string]int{}, ids: map[string]string{}, stamp: map[[2]string]string{}, versions: map[string]string{}}
	// id reads a session id, printed as a string (or, by mistake, as a
	// number: what JSON readers such as jq round above 2^53).
	id := func(what string, v any) string {
		if _, ok := v.(json.Number); ok && len(a.numbers) < maxShown {
			a.numbers = append(a.numbers, fmt.Sprintf("%s %v", what, v))
		}
		return fmt.Sprint(v)
	}

	for _, row := range recordsJSON(t, bin, p.args("sessions", "--json")) {
		res, _ := row["resource"].(map[string]any)
		inst, _ := res["service.instance.id"].(string)
		if _, ok := truth[inst]; !ok {
			t.Fatalf("%s: a session of no instance of the workload: %v", p.about, row)
		}
		if _, ok := a.sessions[inst]; ok {
			t.Errorf("%s: instance %s has more than one session", p.about, inst)
		}
		a.ids[id("sessions --json: id", row["id"])] = inst
		// Where a session starts, and its id, are the path's: the
		// sender's clock in process, the gateway's on the Collector's
		// paths, and an id each recorder gives.
		delete(row, "id")
		delete(row, "started_unix_ms")
		a.sessions[inst] = canonical(row)
	}
	if len(a.sessions) != len(truth) {
		t.Fatalf("%s: sessions of %v, want one of each of %d instances", p.about, slices.Sorted(maps.Keys(a.sessions)), len(truth))
	}
	for line := range strings.Lines(records(t, bin, p.args("sessions")...)) {
		// ID STARTED LABEL PID OS ARCH VERSION RECORDS; the label is "-".
		if f := strings.Fields(line); len(f) > 6 && a.ids[f[0]] != "" {
			a.versions[a.ids[f[0]]] = f[6]
		}
	}

	for _, rec := range recordsJSON(t, bin, p.args("dump", "--json")) {
		span := fmt.Sprint(rec["trace_id"], "/", rec["span_id"])
		st := [2]string{id("dump --json: session", rec["session"]), fmt.Sprint(rec["seq"])}
		inst := a.ids[st[0]]
		a.stamp[st] = span
		a.order[inst] = append(a.order[inst], span)
		// A record's stamp is its session's: its id, and its offset from
		// the instant the id names, up to 2^24 ns before the session's
		// first record (recorder.Stamp) and drawn anew on each path, so
		// offsets are compared from the session's first record. Its seq
		// is compared as the order of the session's records.
		off, _ := strconv.ParseInt(fmt.Sprint(rec["offset_ns"]), 10, 64)
		a.offsets[span] = off
		delete(rec, "session")
		delete(rec, "seq")
		delete(rec, "offset_ns")
		rec["instance"] = inst
		if _, ok := a.records[span]; ok {
			t.Errorf("%s: span %s recorded twice", p.about, span)
		}
		a.records[span] = canonical(rec)
		a.fields[span] = rec
	}

	for _, spans := range a.order {
		first := a.offsets[spans[0]]
		for _, span := range spans {
			first = min(first, a.offsets[span])
		}
		for _, span := range spans {
			a.offsets[span] -= first
		}
	}

	for _, q := range whyQueries {
		text := records(t, bin, p.args("why", q[0], "cache.key="+q[1])...)
		words := map[[2]string]string{}
		for _, m := range regexp.MustCompile(`(?m)^(\d+) +(\d+) +\S+ +(.*)$`).FindAllStringSubmatch(text, -1) {
			w := strings.TrimSpace(m[3])
			for id, inst := range a.ids { // "environment differs from session ID"
				w = strings.ReplaceAll(w, id, "<"+inst+">")
			}
			// "seq 8 of this session", "(compute seq 26)": a record of
			// the line's session, by its seq, which each path numbers
			// its own way (in process every span started has one).
			w = whySeq.ReplaceAllStringFunc(w, func(s string) string {
				return "<" + a.stamp[[2]string{m[1], strings.TrimPrefix(s, "seq ")}] + ">"
			})
			words[[2]string{m[1], m[2]}] = w
		}
		for _, l := range recordsJSON(t, bin, p.args("why", q[0], "cache.key="+q[1], "--json")) {
			if _, ok := l["tallied"]; ok {
				// What the session's tally counted of the key, hits all.
				w := whyLine{Instance: a.ids[id("why --json: session", l["session"])], Cause: causeTallied, Verdict: "hit"}
				outcomes, _ := l["outcomes"].(map[string]any)
				w.Hits, _ = strconv.Atoi(fmt.Sprint(outcomes["hit"]))
				delete(l, "session")
				w.Rest = canonical(l)
				a.why[q[0]+" "+q[1]] = append(a.why[q[0]+" "+q[1]], w)
				continue
			}
			st := [2]string{id("why --json: session", l["session"]), fmt.Sprint(l["seq"])}
			w := whyLine{Instance: a.ids[st[0]], Span: a.stamp[st], Reason: fmt.Sprint(l["reason"]), Verdict: fmt.Sprint(l["verdict"]), Words: words[st]}
			w.Cause = w.Reason
			if strings.Contains(w.Words, causeAnother) && w.Reason != causeForgotten {
				w.Cause = causeAnother
			}
			if prev, ok := l["previous"].(map[string]any); ok {
				w.Previous = a.stamp[[2]string{id("why --json: previous.session", prev["session"]), fmt.Sprint(prev["seq"])}]
				l["previous"] = w.Previous
			}
			delete(l, "session")
			delete(l, "seq")
			if in, ok := l["inside"].(map[string]any); ok {
				w.Inside = fmt.Sprint(in["kind"])
				delete(in, "seq")
			}
			w.Rest = canonical(l)
			a.why[q[0]+" "+q[1]] = append(a.why[q[0]+" "+q[1]], w)
		}
	}

	for _, row := range recordsJSON(t, bin, p.args("cost", "--top", "0", "--json")) {
		key := canonical([]any{row["table"], row["kind"], row["name"], row["key"], row["parent"], row["child"]})
		a.cost[key] = canonical(row)
	}

	ids := a.sessionOf()
	for _, l := range recordsJSON(t, bin, p.args("diff", "--session", ids[0], "--against-session", ids[1], "--json")) {
		a.diff[diffKey(l)] = canonical(l)
	}

	for i, s := range ids {
		out := filepath.Join(t.TempDir(), "report.html")
		records(t, bin, p.args("report", "--session", s, "-o", out)...)
		page, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		a.reports[fourPathInstances[i].id] = reportNumbers(t, page)
	}
	return a
}

// diffKey is what a line of `records diff --json` is compared by between
// paths: its change, kind, name, key, verdict and effect, or its total.
func diffKey(l map[string]any) string {
	return canonical([]any{l["change"], l["kind"], l["name"], l["key"], l["verdict"], l["effect"], l["total"]})
}

// sessionOf returns the session ids of the instances, in the order of
// fourPathInstances.
func (a *fourPathAnswers) sessionOf() []string {
	out := make([]string, len(fourPathInstances))
	for id, inst := range a.ids {
		for i, in := range fourPathInstances {
			if in.id == inst {
				out[i] = id
			}
		}
	}
	return out
}

var (
	// whySeq is a record named by its seq in why's words.
	whySeq = regexp.MustCompile(`\bseq \d+\b`)
	// reportSummaryRow is a row of the report's summary: kind, records,
	// changed, missed, hits, and the hits tallied (issue 46: "3 + 390
	// tallied (median 1µs)") when the session's tally counts some; or
	// "not recorded" where the kind's records do not say what they did.
	// A kind of tallied records alone has no table to link to.
	reportSummaryRow = regexp.MustCompile(`<tr><td><span class="swatch [^"]*"></span>(?:<a href="#kind-\d+">)?([^<]*)(?:</a>)?</td><td class="n">(\d+)</td>(?:<td class="n">(\d+)</td><td class="n">(\d+)</td><td class="n">(\d+)(?: \+ (\d+) tallied[^<]*)?</td>|<td class="n" colspan="[34]"[^>]*>not recorded</td>)`)
	// reportKindSection is a kind's table: its name, its columns and its
	// rows.
	reportKindSection = regexp.MustCompile(`(?s)<section class="kind" id="kind-\d+">\s*<h2><span class="swatch [^"]*"></span>([^<]*)</h2>.*?<thead><tr>(.*?)</tr></thead>\s*<tbody>(.*?)</tbody>`)
	reportCell        = regexp.MustCompile(`<t[dh][^>]*>(.*?)</t[dh]>`)
	reportRow         = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
)

// reportNumbers reads the numbers a report shows: of each kind, "KIND
// records", "KIND changed", "KIND missed", "KIND hits" and "KIND
// tallied" (hits the session's tally counts) from its summary (-1: "not
// recorded"); and from its table, how many records of each key did what
// ("KIND KEY DID", DID as the "did" column says it).
func reportNumbers(t *testing.T, page []byte) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, m := range reportSummaryRow.FindAllSubmatch(page, -1) {
		for i, what := range []string{"records", "changed", "missed", "hits", "tallied"} {
			v, err := strconv.Atoi(string(m[i+2]))
			if err != nil && (what != "tallied" || m[3] == nil) {
				v = -1 // not recorded
			}
			n[string(m[1])+" "+what] = v
		}
	}
	if len(n) == 0 {
		t.Fatalf("the report has no summary rows:\n%s", cut(string(page)))
	}
	for _, sec := range reportKindSection.FindAllSubmatch(page, -1) {
		var cols []string
		for _, c := range reportCell.FindAllSubmatch(sec[2], -1) {
			cols = append(cols, string(c[1]))
		}
		did, key := slices.Index(cols, "did"), slices.Index(cols, "cache.key")
		if did < 0 {
			t.Fatalf("the report's table of %s has no did column: %q", sec[1], cols)
		}
		for _, row := range reportRow.FindAllSubmatch(sec[3], -1) {
			cells := reportCell.FindAllSubmatch(row[1], -1)
			k := ""
			if key >= 0 && key < len(cells) {
				k = string(cells[key][1])
			}
			n[fmt.Sprintf("%s %s %s", sec[1], k, cells[did][1])]++
		}
	}
	return n
}
