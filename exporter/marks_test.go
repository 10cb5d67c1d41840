package exporter_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// markStory runs spans of every shape the marks policy tells apart, keeps
// the session with a last change, and returns the marks recorded, sorted.
func markStory(t *testing.T, opts ...exporter.Option) []string {
	t.Helper()
	mem := sessions.NewMemStore()
	p := newProvider(t, "", append([]exporter.Option{exporter.WithStore(mem)}, opts...)...)
	bg := context.Background()

	// An implicit mark with only implicit marks inside: a request that
	// observed.
	ctx, req := p.span(bg, "observing request")
	_, db := p.span(ctx, "db query")
	db.End()
	req.End()

	// A record three levels down, started on another goroutine.
	ctx, req = p.span(bg, "request with a record")
	ctx, handler := p.span(ctx, "handler")
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, c := p.span(ctx, "compile", spanbridge.Kind("compile"))
		c.End()
	}()
	<-done
	handler.End()
	req.End()

	// A record that starts inside the mark and ends after it.
	ctx, req = p.span(bg, "request ended before its record")
	_, late := p.span(ctx, "async compile", spanbridge.Kind("compile"))
	req.End()
	late.End()

	// An explicit mark inside an implicit one.
	ctx, req = p.span(bg, "request with a phase")
	_, phase := p.tr.Start(ctx, "phase", spanbridge.Mark()...)
	phase.End()
	req.End()

	// A record whose parent ended before it started is not inside it.
	ctx, req = p.span(bg, "request ended first")
	req.End()
	_, after := p.span(ctx, "compile after", spanbridge.Kind("compile"))
	after.End()

	// An explicit mark with nothing inside.
	_, lone := p.tr.Start(bg, "lone phase", spanbridge.Mark(attribute.Int("turn", 7))...)
	lone.End()

	p.do("keep", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	got := names(t, sessions.NewRecords(mem.Reopen()), sessions.MarksKind)
	slices.Sort(got)
	if n := len(names(t, sessions.NewRecords(mem.Reopen()), "compile")); n != 4 {
		t.Fatalf("%d compile records, want 4: records are recorded under every policy", n)
	}
	return got
}

func TestMarksEnclosingIsTheDefault(t *testing.T) {
	want := []string{"handler", "lone phase", "phase", "request ended before its record", "request with a phase", "request with a record"}
	if got := markStory(t); !slices.Equal(got, want) {
		t.Fatalf("marks = %q\nwant   %q", got, want)
	}
}

func TestMarksAll(t *testing.T) {
	want := []string{"db query", "handler", "lone phase", "observing request", "phase", "request ended before its record",
		"request ended first", "request with a phase", "request with a record"}
	if got := markStory(t, exporter.WithMarks(exporter.MarksAll)); !slices.Equal(got, want) {
		t.Fatalf("marks = %q\nwant   %q", got, want)
	}
}

func TestMarksNoneKeepsExplicitMarks(t *testing.T) {
	want := []string{"lone phase", "phase"}
	if got := markStory(t, exporter.WithMarks(exporter.MarksNone)); !slices.Equal(got, want) {
		t.Fatalf("marks = %q\nwant   %q", got, want)
	}
}

func TestMarksFromEnvironment(t *testing.T) {
	t.Setenv(exporter.EnvMarks, "NONE")
	if got := markStory(t); !slices.Equal(got, []string{"lone phase", "phase"}) {
		t.Fatalf("with %s=none, marks = %q", exporter.EnvMarks, got)
	}
	// The option wins over the environment.
	if got := markStory(t, exporter.WithMarks(exporter.MarksAll)); len(got) != 9 {
		t.Fatalf("WithMarks(MarksAll) beside %s=none: marks = %q", exporter.EnvMarks, got)
	}
	e := captureErrors(t)
	t.Setenv(exporter.EnvMarks, "some")
	if got := markStory(t); len(got) != 6 {
		t.Fatalf("with an invalid %s, marks = %q, want the default policy's 6", exporter.EnvMarks, got)
	}
	if len(e.All()) != 1 || !strings.Contains(e.All()[0].Error(), exporter.EnvMarks) {
		t.Fatalf("reports = %v, want one naming %s", e.All(), exporter.EnvMarks)
	}
}

// Implicit marks that enclose nothing are let go when they end, never
// held: a server's stream of request spans evicts none of the records
// held before the session's first change.
func TestUnenclosingMarksCostNoBudget(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem), exporter.WithPendingBudget(4<<10))
	p.do("lookup", spanbridge.Kind("autotune"), attribute.String("key", "a"))
	for i := range 1000 {
		ctx, req := p.span(context.Background(), fmt.Sprint("GET /", i), attribute.String("http.route", "/"))
		_, db := p.span(ctx, "SELECT")
		db.End()
		req.End()
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.exp.Stats(); st.Held != 1 || st.Evicted != 0 {
		t.Fatalf("stats = %+v, want the lookup alone held and nothing evicted", st)
	}
	p.do("compile", spanbridge.Kind("compile"), spanbridge.Changed())
	p.shutdown(t)
	r := sessions.NewRecords(mem.Reopen())
	if got := names(t, r, "autotune"); !slices.Equal(got, []string{"lookup"}) {
		t.Fatalf("autotune = %q, want the lookup held before the change", got)
	}
	if got := names(t, r, sessions.MarksKind); len(got) != 0 {
		t.Fatalf("marks = %q, want none", got)
	}
}

// A chain of implicit marks deeper than the walk's bound records the
// marks nearest the record; the walk stops, the span call stays cheap.
func TestEnclosingWalkIsBounded(t *testing.T) {
	mem := sessions.NewMemStore()
	p := newProvider(t, "", exporter.WithStore(mem))
	const depth = 300
	ctx := context.Background()
	var open []trace.Span
	for i := range depth {
		var s trace.Span
		ctx, s = p.span(ctx, fmt.Sprint("level ", i))
		open = append(open, s)
	}
	p.do("keep", spanbridge.Kind("compile"), spanbridge.Changed())
	_, c := p.span(ctx, "deep compile", spanbridge.Kind("compile"))
	c.End()
	for _, s := range slices.Backward(open) {
		s.End()
	}
	p.shutdown(t)
	got := names(t, sessions.NewRecords(mem.Reopen()), sessions.MarksKind)
	if len(got) == 0 || len(got) >= depth || !slices.Contains(got, fmt.Sprint("level ", depth-1)) {
		t.Fatalf("%d marks recorded of %d, want the nearest ones and not all", len(got), depth)
	}
}

// A span without records.kind that says records.effect=changed changed the
// store's caches: it is recorded, as a mark, and keeps its session under
// every policy.
func TestChangedSpanWithoutKindKeepsItsSession(t *testing.T) {
	for _, m := range []exporter.Marks{exporter.MarksEnclosing, exporter.MarksAll, exporter.MarksNone} {
		mem := sessions.NewMemStore()
		p := newProvider(t, "", exporter.WithStore(mem), exporter.WithMarks(m))
		_, s := p.span(context.Background(), "write cache")
		s.SetAttributes(spanbridge.Changed()) // set late: still a change
		s.End()
		p.shutdown(t)
		if got := names(t, sessions.NewRecords(mem.Reopen()), sessions.MarksKind); !slices.Equal(got, []string{"write cache"}) {
			t.Errorf("%v: marks = %q, want the change recorded", m, got)
		}
		if p.exp.Stats().SessionsKept != 1 {
			t.Errorf("%v: the change did not keep the session", m)
		}
	}
}
