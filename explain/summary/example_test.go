package summary_test

import (
	"fmt"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

// build returns a store of one session: a build's mark, an autotune
// inside it that ran two candidates, and a compile after it.
func build() (*sessions.Records, sessions.Session) {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s := sessions.Session{ID: sessions.SessionID(start.UnixNano()), StartedUnixMs: start.UnixMilli(), Label: "models build"}
	ms := time.Millisecond
	trace := sessions.TraceID{15: 1}
	var records []sessions.KindRecord
	for i, r := range []struct {
		kind, name   string
		at, wall     time.Duration
		span, parent byte
		effect       sessions.Effect
	}{
		{sessions.MarksKind, "build", 0, 90 * ms, 1, 0, sessions.Observed},
		{"autotune", "matmul/4096", 5 * ms, 40 * ms, 2, 1, sessions.Changed},
		{"candidate", "tiled", 5 * ms, 15 * ms, 3, 2, sessions.Observed},
		{"candidate", "split-k", 20 * ms, 25 * ms, 4, 2, sessions.Observed},
		{"compile", "matmul kernel", 45 * ms, 40 * ms, 5, 1, sessions.Changed},
	} {
		rec := sessions.Record{Name: r.name, Wall: r.wall, Effect: r.effect, SpanKind: "internal", TraceID: trace, SpanID: sessions.SpanID{7: r.span}}
		if r.parent != 0 {
			rec.ParentSpanID = sessions.SpanID{7: r.parent}
		}
		records = append(records, sessions.KindRecord{Kind: r.kind, Stamped: sessions.Stamped[sessions.Record]{
			Stamp: sessions.Stamp{Session: s.ID, Seq: uint64(i), Offset: r.at}, Record: rec}})
	}
	r := sessions.NewRecords(sessions.NewMemStore())
	if err := r.Put([]sessions.Session{s}, records); err != nil {
		panic(err)
	}
	return r, s
}

// Each session summed up, as records summary prints it: its duration, each
// kind's time counted once (the candidates ran one after the other, 40ms
// in all, inside the autotune's 40ms), the slowest records and the
// records of the critical path that held the session up most.
func ExampleSessions() {
	r, _ := build()
	sums, err := summary.Sessions(r, summary.Options{Slowest: 2, Named: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range sums {
		fmt.Printf("%s: lasted %v\n", s.Label, s.Summary.End)
		for _, k := range s.Summary.Kinds {
			fmt.Printf("  %s: %d records, %v\n", k.Kind, k.Records, k.Wall)
		}
		for _, kr := range s.Slowest {
			fmt.Printf("  slow: %s %v\n", kr.Record.Name, kr.Record.Wall)
		}
		fmt.Printf("  critical path: %d records, the %d that held it up most:\n", len(s.Path), len(s.Named))
		for _, st := range s.Named {
			fmt.Printf("  path: %s (%s) held it up %v\n", st.Name, st.Kind, st.Critical)
		}
	}
	// Output:
	// models build: lasted 90ms
	//   autotune: 1 records, 40ms
	//   candidate: 2 records, 40ms
	//   compile: 1 records, 40ms
	//   marks: 1 records, 90ms
	//   slow: build 90ms
	//   slow: matmul/4096 40ms
	//   critical path: 5 records, the 3 that held it up most:
	//   path: tiled (candidate) held it up 15ms
	//   path: split-k (candidate) held it up 25ms
	//   path: matmul kernel (compile) held it up 40ms
}

// One session laid out for a page, as records report draws it: each kind's
// counts and what its records did, the slowest records, and the timeline,
// each record on a row under the record it ran inside.
func ExampleNewReport() {
	r, s := build()
	rep, err := summary.NewReport(r, s, summary.ReportOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, k := range rep.Kinds {
		fmt.Printf("%s: %d records, %v: %d changed something, %d missed, %d hits\n",
			k.Kind, k.Count, k.Wall, k.Verdicts[explain.Done], k.Verdicts[explain.Miss], k.Verdicts[explain.Hit])
	}
	fmt.Println("slowest:", rep.Slowest)
	for seq := range uint64(rep.Total) {
		fmt.Printf("seq %d on row %d\n", seq, rep.Rows[seq])
	}
	// Output:
	// autotune: 1 records, 40ms: 1 changed something, 0 missed, 0 hits
	// candidate: 2 records, 40ms: 0 changed something, 0 missed, 2 hits
	// compile: 1 records, 40ms: 1 changed something, 0 missed, 0 hits
	// marks: 1 records, 90ms: 0 changed something, 1 missed, 0 hits
	// slowest: [0 1 4 3 2]
	// seq 0 on row 0
	// seq 1 on row 1
	// seq 2 on row 2
	// seq 3 on row 2
	// seq 4 on row 1
}

// A server's session of many requests, each a root: more than a screenful
// whose names repeat is summed up by kind and name, the slowest shown
// whole.
func ExampleGroupRoots() {
	id := sessions.SessionID(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	var b explain.TreeBuilder
	for i := range 50 {
		name := "GET /status"
		if i%5 == 0 {
			name = "GET /build"
		}
		kr := sessions.KindRecord{Kind: "request", Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: uint64(i), Offset: time.Duration(i) * time.Millisecond},
			Record: sessions.Record{Name: name, Wall: time.Duration(1+i%7) * time.Millisecond, SpanKind: "server", TraceID: sessions.TraceID{15: byte(i + 1)}, SpanID: sessions.SpanID{7: 1}},
		}}
		if err := b.Add(kr); err != nil {
			fmt.Println(err)
			return
		}
	}
	g := summary.GroupRoots(b.Tree())
	fmt.Printf("%d roots in %d groups; the slowest, whole: %v\n", g.Roots, len(g.Groups), g.Slowest)
	for _, rg := range g.Groups {
		fmt.Printf("%s %q: %d, median %v, max %v\n", rg.Kind, rg.Name, rg.Count, rg.Median, rg.Max)
	}
	// Output:
	// 50 roots in 2 groups; the slowest, whole: [6 13 20 27 34]
	// request "GET /status": 40, median 4ms, max 7ms
	// request "GET /build": 10, median 4ms, max 7ms
}
