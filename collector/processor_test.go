package collector

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// senderBatch is n spans of the sender instance, each its own root, the
// i-th changed when changed(i).
func senderBatch(instance string, from, n int, changed func(int) bool) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "fleet")
	rs.Resource().Attributes().PutStr("service.instance.id", instance)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("build")
	now := pcommon.NewTimestampFromTime(time.Now())
	for i := from; i < from+n; i++ {
		s := ss.Spans().AppendEmpty()
		s.SetName("step")
		s.SetTraceID(pcommon.TraceID{byte(len(instance)), byte(i >> 8), byte(i), 15: 1})
		s.SetSpanID(pcommon.SpanID{7: 1})
		s.SetStartTimestamp(now - pcommon.Timestamp(n-i)*1e6)
		s.SetEndTimestamp(now - pcommon.Timestamp(n-i)*1e6 + 1e5)
		s.Attributes().PutStr("records.kind", "step")
		s.Attributes().PutInt("n", int64(i))
		if changed(i) {
			s.Attributes().PutStr("records.effect", "changed")
		}
	}
	return td
}

// recordSpans counts the spans the sink took but the tallies' (a kept
// session's tally is handed on too, a span of its own: MAPPING.md §8.6).
func recordSpans(sink *consumertest.TracesSink) int {
	n := 0
	for _, td := range sink.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					if s.Name() != spanbridge.TallyName {
						n++
					}
				}
			}
		}
	}
	return n
}

// runProcessor runs the records processor with cfg over tds, into a sink.
func runProcessor(t *testing.T, cfg *ProcessorConfig, tds ...ptrace.Traces) *consumertest.TracesSink {
	t.Helper()
	p, sink := startRecordsProcessor(t, cfg)
	for _, td := range tds {
		if err := p.ConsumeTraces(context.Background(), td); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink
}

// A warm sender passes nothing downstream; a sender that changes
// something passes its whole session — what it held before the change
// too — each span carrying what makes it a record again.
func TestProcessorPassesOnlyWhatChanged(t *testing.T) {
	cfg := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
	never := func(int) bool { return false }
	sink := runProcessor(t, cfg, senderBatch("warm", 0, 50, never), senderBatch("builder", 0, 10, never), senderBatch("builder", 10, 5, func(i int) bool { return i == 12 }))
	if n := recordSpans(sink); n != 15 {
		t.Fatalf("%d spans downstream, want the 15 of the session that changed", n)
	}
	seqs := map[int64]bool{}
	for _, td := range sink.AllTraces() {
		for i := range td.ResourceSpans().Len() {
			rs := td.ResourceSpans().At(i)
			res := rs.Resource().Attributes()
			if v, _ := res.Get("service.instance.id"); v.Str() != "builder" {
				t.Errorf("spans of %q passed on", v.Str())
			}
			if v, ok := res.Get("records.session.id"); !ok || v.Str() == "" {
				t.Errorf("Resource without records.session.id: %v", res.AsRaw())
			}
			spans := rs.ScopeSpans().At(0).Spans()
			for j := range spans.Len() {
				a := spans.At(j).Attributes()
				seq, ok := a.Get("records.seq")
				kind, _ := a.Get("records.kind")
				if !ok || kind.Str() != "step" {
					t.Errorf("span %v without records.seq or records.kind", a.AsRaw())
				}
				seqs[seq.Int()] = true
			}
		}
	}
	if len(seqs) != 15 {
		t.Errorf("%d distinct seqs, want 15", len(seqs))
	}
}

// With a directory the processor records into a store as well, and what
// it passes on is what the store holds.
func TestProcessorRecordsLocallyToo(t *testing.T) {
	cfg := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
	cfg.Directory = filepath.Join(t.TempDir(), "store")
	sink := runProcessor(t, cfg, senderBatch("builder", 0, 20, func(i int) bool { return i == 19 }))
	st, err := badgerstore.Open(cfg.Directory, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	for _, err := range sessions.NewRecords(st).All("step") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 20 || recordSpans(sink) != 20 {
		t.Fatalf("%d records stored, %d spans passed on; want 20 and 20", n, recordSpans(sink))
	}
	bad := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
	bad.MaxBytes = 1 << 20
	if err := bad.Validate(); err == nil {
		t.Error("max_bytes without a directory validated")
	}
}

// The span slices of one request are reused by the next (batches,
// release): a span that waits for its parent across requests is the
// Importer's copy, and comes out as it was sent, not as whatever a later
// request put in the slot it came in.
func TestProcessorHeldSpanOutlivesItsRequest(t *testing.T) {
	cfg := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
	cfg.KeepBy = "trace"
	tid := pcommon.TraceID{0xab, 15: 1}
	now := pcommon.NewTimestampFromTime(time.Now())
	one := func(name string, id, parent byte, changed bool) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "held")
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetName(name)
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{7: id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{7: parent})
		}
		s.SetStartTimestamp(now)
		s.SetEndTimestamp(now + 1e6)
		s.Attributes().PutStr("records.kind", "step")
		s.Attributes().PutStr("who", name)
		if changed {
			s.Attributes().PutStr("records.effect", "changed")
		}
		return td
	}
	// The child comes first and waits; a hundred requests of other
	// senders go through the same slices; then its parent comes.
	tds := []ptrace.Traces{one("child", 2, 1, true)}
	for i := range 100 {
		tds = append(tds, senderBatch("other", i*10, 10, func(int) bool { return false }))
	}
	tds = append(tds, one("parent", 1, 0, false))
	sink := runProcessor(t, cfg, tds...)
	got, seqs := map[string]string{}, map[string]int64{}
	for _, td := range sink.AllTraces() {
		for i := range td.ResourceSpans().Len() {
			ss := td.ResourceSpans().At(i).ScopeSpans()
			for j := range ss.Len() {
				for k := range ss.At(j).Spans().Len() {
					s := ss.At(j).Spans().At(k)
					if s.Name() == spanbridge.TallyName {
						continue // the session's tally: no record
					}
					if s.TraceID() != tid {
						t.Errorf("span %q of another trace passed on", s.Name())
						continue
					}
					who, _ := s.Attributes().Get("who")
					got[s.Name()] = who.Str()
					seq, _ := s.Attributes().Get("records.seq")
					seqs[s.Name()] = seq.Int()
				}
			}
		}
	}
	if len(got) != 2 || got["child"] != "child" || got["parent"] != "parent" {
		t.Errorf("passed on %v, want the child and its parent, each with its own attributes", got)
	}
	if seqs["parent"] >= seqs["child"] {
		t.Errorf("seqs %v: the child did not wait for its parent", seqs)
	}
}
