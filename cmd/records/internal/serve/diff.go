package serve

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
)

// diffPage is two sessions compared: records diff --session A
// --against-session B.
type diffPage struct {
	frame
	A, B       string // the ids, as given or found
	FailSlower string // as given
	MinDelta   string
	Sides      [2]diffSide
	Judged     bool // --fail-slower was given: Slower is its verdict
	Pct        float64
	Slower     []diffRow // regressions first
	Changed    []diffRow // then what differs
	Same       []diffRow // then the rest
	Durations  []totalRow
	LeftOut    string
	ByDefault  bool // B is the session before A of its label
	NoPrevious bool // A has no session before it of its label
	Sessions   []sessionChoice
	// Hits is how often each key hit on either side, kept and tallied
	// hits together (records diff's table of hits).
	Hits []hitRow
}

// hitRow is a key's hits on each side: "12/13 92%, 12 tallied", and how
// long a hit took.
type hitRow struct {
	Kind, Name               string
	A, B, MedianA, MedianB   string
	MeanA, MeanB, MeanBVersA string
}

// diffSide is one side, as the page names it.
type diffSide struct {
	ID       sessions.SessionID
	Label    string
	Started  string
	Records  int
	Duration string
}

// diffRow is a key of the comparison.
type diffRow struct {
	Sign, Change     string
	Kind, Name, Key  string
	Verdict          string
	CountA, CountB   int
	MedianA, MedianB string
	By               string // how B's median compares: +25%
	Differences      string
	HistoryKey       string // the why page of its key, "" when it has none
}

// diffTable is a table of the diff page: its title, rows, and class.
type diffTable struct {
	Title string
	Rows  []diffRow
	Class string
}

// totalRow is a time on both sides.
type totalRow struct {
	What, A, B, By string
}

// sessionChoice is a session the page's form offers.
type sessionChoice struct {
	ID    sessions.SessionID
	Label string
}

// diff compares two sessions: a and b, or a and the session before it of
// the same label. With fail_slower (and min_delta), the page gives
// --fail-slower's verdict. Its JSON is records diff --json's objects;
// with fail_slower, then one more, {"slower": [...], "fail_slower_pct",
// "min_delta_ns", "passed"}: the verdict the command's exit status gives.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := diffPage{frame: s.frame(r, "diff", "diff"), A: q.Get("a"), B: q.Get("b"), FailSlower: q.Get("fail_slower"), MinDelta: q.Get("min_delta")}
	minDelta := time.Millisecond
	if p.FailSlower != "" {
		pct, err := strconv.ParseFloat(p.FailSlower, 64)
		if err != nil || pct < 0 || math.IsNaN(pct) || math.IsInf(pct, 0) {
			s.fail(w, r, badRequest("fail_slower %q: want a percentage, 0 or more", p.FailSlower))
			return
		}
		p.Judged, p.Pct = true, pct
	}
	if p.MinDelta != "" {
		d, err := time.ParseDuration(p.MinDelta)
		if err != nil || d < 0 {
			s.fail(w, r, badRequest("min_delta %q: want a duration, 0 or more (like 1ms)", p.MinDelta))
			return
		}
		minDelta = d
	}
	var (
		c       explain.Comparison
		slower  []explain.Slowdown
		chosen  bool
		tallies [2]*tallied.Sum // what each side let go, counted
	)
	err := s.cfg.Stores.Read(r.Context(), func(all *sessions.Records, each []stores.Store) error {
		if err := p.choices(all); err != nil {
			return err
		}
		if p.A == "" {
			return nil // the form alone
		}
		chosen = true
		ids, err := p.sides(all, each)
		if err != nil || p.NoPrevious {
			return err
		}
		var read [2]*explain.Side
		for i, id := range ids {
			if read[i], err = (explain.Match{}).Read(all, nil, sessions.InSession(id)); err != nil {
				return err
			}
			if tallies[i], err = tallied.Read(all, explain.Match{}.KeyOf, nil, false, sessions.InSession(id)); err != nil {
				return err
			}
			p.Sides[i].Records, p.Sides[i].Duration = read[i].Records, render.Duration(read[i].Duration)
		}
		c = explain.Diff(read[0], read[1])
		if p.Judged {
			slower = c.Slower(p.Pct, minDelta)
		}
		return nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if isAPI(r) {
		if !chosen || p.NoPrevious {
			s.fail(w, r, badRequest("diff needs a session a (and b, else the session before a of its label)"))
			return
		}
		writeDiff(w, c, tallies, slower, p.Judged, p.Pct, minDelta)
		return
	}
	if chosen && !p.NoPrevious {
		p.rows(c, tallies, slower)
	}
	s.page(w, "diff", p)
}

// choices lists the sessions the form offers, newest first: at most
// perPage of them.
func (p *diffPage) choices(all *sessions.Records) error {
	for row, err := range all.Sessions() {
		if err != nil {
			return err
		}
		p.Sessions = append(p.Sessions, sessionChoice{row.ID, cut(row.Label)})
		if len(p.Sessions) > perPage {
			p.Sessions = p.Sessions[1:]
		}
	}
	slices.Reverse(p.Sessions)
	return nil
}

// sides finds the two sessions: b, or the one before a of its label.
func (p *diffPage) sides(all *sessions.Records, each []stores.Store) ([2]sessions.SessionID, error) {
	var ids [2]sessions.SessionID
	for i, v := range []string{p.A, p.B} {
		if i == 1 && v == "" {
			break
		}
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return ids, badRequest("%q is not a session id (a decimal number)", v)
		}
		ids[i] = sessions.SessionID(id)
	}
	rowA, _, err := findSession(all, each, ids[0])
	if err != nil {
		return ids, err
	}
	if p.B == "" {
		p.ByDefault = true
		if ids[1], err = previousOf(all, rowA); err != nil {
			return ids, err
		}
		if ids[1] == 0 {
			p.NoPrevious = true
			p.Sides[0] = diffSide{ID: ids[0], Label: render.Clean(rowA.Label), Started: started(rowA)}
			return ids, nil
		}
		p.B = ids[1].String()
	}
	rowB, _, err := findSession(all, each, ids[1])
	if err != nil {
		return ids, err
	}
	// A diff reads B against A: the older is A when B is found for it.
	if p.ByDefault {
		ids[0], ids[1] = ids[1], ids[0]
		rowA, rowB = rowB, rowA
		p.A, p.B = ids[0].String(), ids[1].String()
	}
	p.Sides[0] = diffSide{ID: ids[0], Label: render.Clean(rowA.Label), Started: started(rowA)}
	p.Sides[1] = diffSide{ID: ids[1], Label: render.Clean(rowB.Label), Started: started(rowB)}
	return ids, nil
}

// rows lays out the comparison: the keys that got slower first (the
// verdict's, when judged), then those that differ, then the same.
func (p *diffPage) rows(c explain.Comparison, tallies [2]*tallied.Sum, slower []explain.Slowdown) {
	isSlower := map[*explain.KeyDiff]bool{}
	for _, sd := range slower {
		isSlower[sd.Key] = true
	}
	for i := range c.Keys {
		k := &c.Keys[i]
		e := k.Entry()
		row := diffRow{Change: string(k.Change), Kind: render.Clean(e.Kind), Name: cut(render.RecordName(e)), Key: cut(render.Attrs(e.Key)),
			Verdict: render.Verdict(e.Verdict)}
		if len(e.Key) > 0 {
			row.HistoryKey = history(e.Kind, e.Key[0])
		}
		if k.A != nil {
			row.CountA, row.MedianA = k.A.Count, render.Duration(k.A.Median)
		}
		if k.B != nil {
			row.CountB, row.MedianB = k.B.Count, render.Duration(k.B.Median)
		}
		if k.A != nil && k.B != nil {
			row.By = render.Change(k.A.Median, k.B.Median)
		}
		parts := make([]string, len(k.Differences))
		for j, d := range k.Differences {
			parts[j] = render.String(d.Key) + ": " + valueOr(d.Before) + " → " + valueOr(d.After)
		}
		row.Differences = cut(strings.Join(parts, "; "))
		switch {
		case isSlower[k]:
			row.Sign = "slower"
			p.Slower = append(p.Slower, row)
		case k.Change == explain.Changed:
			row.Sign = "~"
			p.Changed = append(p.Changed, row)
		case k.Change == explain.OnlyInA:
			row.Sign, row.Differences = "−", render.Absent(c, e, render.DiffSide{Tally: tallies[1]}, "B", "")
			p.Changed = append(p.Changed, row)
		case k.Change == explain.OnlyInB:
			row.Sign, row.Differences = "+", render.Absent(c, e, render.DiffSide{Tally: tallies[0]}, "A", "")
			p.Changed = append(p.Changed, row)
		default:
			row.Sign = "="
			p.Same = append(p.Same, row)
		}
	}
	p.Durations = append(p.Durations, totalRow{"duration", render.Duration(c.Duration.A), render.Duration(c.Duration.B), render.Change(c.Duration.A, c.Duration.B)})
	for _, k := range c.Kinds {
		p.Durations = append(p.Durations, totalRow{render.Clean(k.Kind), render.Duration(k.A), render.Duration(k.B), render.Change(k.A, k.B)})
	}
	p.LeftOut = render.Clean(strings.Join(c.LeftOut, ", "))
	for _, h := range summary.Hits(c, tallies[0], tallies[1]) {
		p.Hits = append(p.Hits, hitRow{Kind: render.Clean(h.Kind), Name: cut(render.HitName(h)),
			A: render.HitRate(h.A), B: render.HitRate(h.B),
			MedianA: render.HitTime(h.A, h.A.Hit.Quantile(0.5)), MedianB: render.HitTime(h.B, h.B.Hit.Quantile(0.5)),
			MeanA: render.HitTime(h.A, h.A.Hit.Mean()), MeanB: render.HitTime(h.B, h.B.Hit.Mean()),
			MeanBVersA: render.Change(h.A.Hit.Mean(), h.B.Hit.Mean())})
	}
}

// valueOr formats a value of a difference, "-" where that side has none.
func valueOr(v *sessions.Value) string {
	if v == nil {
		return "-"
	}
	return render.Value(*v)
}

// verdictLine is the diff's verdict, as its JSON's last line says it.
type verdictLine struct {
	Slower     []slowLine `json:"slower"`
	FailSlower float64    `json:"fail_slower_pct"`
	MinDeltaNs int64      `json:"min_delta_ns"`
	Passed     bool       `json:"passed"`
}

// slowLine is a key the verdict found slower.
type slowLine struct {
	Kind      string         `json:"kind"`
	Name      string         `json:"name"`
	Key       sessions.Attrs `json:"key"`
	MedianANs int64          `json:"median_a_ns"`
	MedianBNs int64          `json:"median_b_ns"`
}

// writeDiff writes the comparison as records diff --json does, and, when
// judged, the verdict.
func writeDiff(w http.ResponseWriter, c explain.Comparison, tallies [2]*tallied.Sum, slower []explain.Slowdown, judged bool, pct float64, minDelta time.Duration) {
	lines := newLineWriter(w)
	for _, k := range c.Keys {
		d, e := api.NewDiffKey(k), k.Entry()
		d.TalliedA, d.TalliedB = tallies[0].Of(e.Kind, e.Name, e.Key).Count, tallies[1].Of(e.Kind, e.Name, e.Key).Count
		lines.encode(d)
	}
	for _, t := range api.NewDiffTotals(c) {
		lines.encode(t)
	}
	for _, h := range summary.Hits(c, tallies[0], tallies[1]) {
		lines.encode(api.NewHitRate(h))
	}
	if len(c.LeftOut) > 0 {
		lines.encode(api.LeftOut{LeftOut: c.LeftOut})
	}
	lines.encode(api.NewDiffTallies(tallies[0], tallies[1]))
	if judged {
		v := verdictLine{Slower: []slowLine{}, FailSlower: pct, MinDeltaNs: int64(minDelta), Passed: len(slower) == 0}
		for _, sd := range slower {
			e := sd.Key.Entry()
			key := e.Key
			if key == nil {
				key = sessions.Attrs{}
			}
			v.Slower = append(v.Slower, slowLine{e.Kind, e.Name, key, int64(sd.A), int64(sd.B)})
		}
		lines.encode(v)
	}
	lines.out.Flush()
}
