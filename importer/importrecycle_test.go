package importer

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// Settle recycles the spans it placed, and only those: a span still
// waiting for its parent keeps what it was given while requests of other
// traces are placed, and their spans recycled and taken again, around it.
func TestImportRecyclesOnlyWhatItPlaced(t *testing.T) {
	r := newImportRig(t, Config{})
	waiting := trace.TraceID{9}
	var want []string
	for round := range 50 {
		// A complete trace, placed (and its spans recycled) at once.
		done := trace.TraceID{1, byte(round + 1)}
		spans := []Span{}
		for i := range 10 {
			s := span(fmt.Sprintf("placed %d.%d", round, i), byte(i+1), byte(i), i, changed("artifact")...)
			s.TraceID = done
			spans = append(spans, s)
		}
		// A child of a root that has not come: it waits.
		w := span(fmt.Sprintf("waiting %d", round), byte(round+2), 1, 100+round, append(changed("step"), attribute.String("round", fmt.Sprint(round)))...)
		w.TraceID = waiting
		spans = append(spans, w)
		r.send(node, spans...)
	}
	if st := r.im.Stats(); st.HeldSpans != 50 {
		t.Fatalf("%d spans waiting, want the 50 children of the root to come", st.HeldSpans)
	}
	r.im.mu.Lock()
	for _, rs := range r.im.sessions {
		for id, p := range rs.traces[waiting].pending {
			if p.span.SpanID != id || p.span.TraceID != waiting || !strings.HasPrefix(p.span.Name, "waiting ") {
				t.Errorf("the span waiting as %v is now %v %v %q: another span's", id, p.span.TraceID, p.span.SpanID, p.span.Name)
			}
		}
	}
	r.im.mu.Unlock()
	if t.Failed() {
		t.FailNow()
	}
	root := span("root", 1, 0, 0, changed("step")...)
	root.TraceID = waiting
	r.send(node, root)
	var got []string
	for _, rec := range r.records() {
		if rec.Record.TraceID != sessions.TraceID(waiting) {
			continue
		}
		got = append(got, rec.Record.Name)
		if rec.Record.Name == "root" {
			continue
		}
		var round int
		if _, err := fmt.Sscanf(rec.Record.Name, "waiting %d", &round); err != nil {
			t.Fatalf("a waiting span came out as %q", rec.Record.Name)
		}
		if !hasAttr(rec.Record.Attributes, "round", fmt.Sprint(round)) || rec.Record.SpanID != sessions.SpanID(sid(byte(round+2))) {
			t.Errorf("%q came out with another span's parts: %+v", rec.Record.Name, rec.Record)
		}
	}
	want = append(want, "root")
	for round := range 50 {
		want = append(want, fmt.Sprintf("waiting %d", round))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the waiting trace came out as %q, want %q", got, want)
	}
}

// What settling a huge trace made its working space grow is let go; a
// small trace's is kept for the next.
func TestSettleScratchStaysSmall(t *testing.T) {
	r := newImportRig(t, Config{})
	var spans []Span
	for i := range 2 * maxSettleScratch {
		s := span(fmt.Sprint("unit ", i), 0, 0, i, changed("artifact")...)
		s.SpanID = trace.SpanID{1, byte(i >> 8), byte(i)}
		if i > 0 {
			s.ParentSpanID = trace.SpanID{1, byte((i - 1) >> 8), byte(i - 1)}
		}
		spans = append(spans, s)
	}
	r.send(node, spans...)
	r.im.mu.Lock()
	sc := r.im.settling
	r.im.mu.Unlock()
	if cap(sc.ready) != 0 || cap(sc.placed) != 0 {
		t.Errorf("after a trace of %d spans the settle space has room for %d ready and %d placed spans", len(spans), cap(sc.ready), cap(sc.placed))
	}
	if got := len(r.records()); got != len(spans) {
		t.Fatalf("%d records, want %d", got, len(spans))
	}
	small := span("small", 1, 0, 0, changed("artifact")...)
	small.TraceID = trace.TraceID{7}
	r.send(node, small)
	r.im.mu.Lock()
	sc = r.im.settling
	r.im.mu.Unlock()
	if cap(sc.placed) == 0 || len(sc.placed) != 0 || len(sc.ready) != 0 {
		t.Errorf("after a small trace the settle space is %+v, want it kept, empty", sc)
	}
}

// A span waiting for its parent is known by its trace, not the seen set:
// sent again while it waits, in the same batch or a later one, it is
// still taken once, and once placed the seen set counts it once.
func TestImportWaitingSpanTakenOnce(t *testing.T) {
	r := newImportRig(t, Config{})
	child := span("compile a", 2, 1, 1, changed("artifact")...)
	if res := r.send(node, child, child); res.Duplicates != 1 {
		t.Fatalf("a waiting span twice in a batch: %+v, want one duplicate", res)
	}
	if res := r.send(node, child); res.Duplicates != 1 {
		t.Fatalf("a waiting span sent again: %+v, want it recognised", res)
	}
	if st := r.im.Stats(); st.HeldSpans != 1 || st.SeenSpans != 0 {
		t.Fatalf("Stats: %d spans waiting, %d remembered; want 1 and 0", st.HeldSpans, st.SeenSpans)
	}
	r.send(node, span("build", 1, 0, 0, changed("step")...), child)
	if got := names(r.records()); !slices.Equal(got, []string{"build", "compile a"}) {
		t.Fatalf("stored %v, want build, then compile a once", got)
	}
	st := r.im.Stats()
	if st.Duplicates != 3 || st.SeenSpans != 2 {
		t.Errorf("Stats: %d duplicates, %d remembered; want 3 and 2", st.Duplicates, st.SeenSpans)
	}
	if res := r.send(node, child); res.Duplicates != 1 {
		t.Fatalf("a placed span sent again: %+v, want it recognised", res)
	}
}

// A span that waits past its Import keeps nothing of the batch it came
// in: the caller may reuse the batch's memory (the Collector components
// do), and the span is recorded as it was sent, attributes, events and
// links included.
func TestImportKeepsNothingOfTheBatch(t *testing.T) {
	r := newImportRig(t, Config{})
	tid := trace.TraceID{7, 15: 7}
	child := span("child", 2, 1, 1, append(changed("artifact"), attribute.String("who", "child"))...)
	child.TraceID = tid
	child.Events = []sdktrace.Event{{Name: "retry", Attributes: []attribute.KeyValue{attribute.String("why", "busy")}}}
	child.Links = []sdktrace.Link{{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}),
		Attributes: []attribute.KeyValue{attribute.String("link", "dep")}}}
	batch := []Span{child}
	r.send(node, batch...)
	if st := r.im.Stats(); st.HeldSpans != 1 {
		t.Fatalf("%d spans held, want the child waiting for its parent", st.HeldSpans)
	}
	// The caller reuses everything it gave.
	garbage := attribute.String("garbage", "garbage")
	for i := range batch[0].Attributes {
		batch[0].Attributes[i] = garbage
	}
	batch[0].Events[0].Name, batch[0].Events[0].Attributes[0] = "garbage", garbage
	batch[0].Links[0].Attributes[0] = garbage
	root := span("root", 1, 0, 0, changed("step")...)
	root.TraceID = tid
	r.send(node, root)
	for _, rec := range r.records() {
		if rec.Record.Name != "child" {
			continue
		}
		b, _ := rec.MarshalCBOR()
		if strings.Contains(string(b), "garbage") {
			t.Fatalf("the child was recorded with what the caller wrote after Import: %+v", rec.Record)
		}
		if v, _ := rec.Record.Attributes.Get("who"); v.AsString() != "child" || len(rec.Record.Events) != 1 || len(rec.Record.Links) != 1 {
			t.Fatalf("the child was recorded as %+v", rec.Record)
		}
		return
	}
	t.Fatal("the child was not recorded")
}

// Import changes nothing it is given: a Resource without an instance id,
// whose attributes name the session, is read, not sorted in place (a
// caller may share it with another goroutine).
func TestImportLeavesTheResourceAsItWas(t *testing.T) {
	r := newImportRig(t, Config{})
	res := []attribute.KeyValue{attribute.String("z", "1"), attribute.String("a", "2"), attribute.Int("process.pid", 9)}
	want := slices.Clone(res)
	r.send(res, span("root", 1, 0, 0, changed("step")...))
	if !slices.Equal(res, want) {
		t.Fatalf("Import changed the caller's Resource: %v, was %v", res, want)
	}
}
