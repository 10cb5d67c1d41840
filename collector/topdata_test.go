package collector

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// appendRecord builds pdata straight from a record; it must build the
// span appendSpan builds of spanbridge.Span's, field for field, for
// records of every shape: ids kept or derived, roots and children, every
// attribute type and the empty value, events, statuses, span kinds known
// and not, trace states that parse and do not, effects and inputs, and
// records with links (the long way).
func TestAppendRecordIsAppendSpan(t *testing.T) {
	every := sessions.Attrs{
		{Key: "b", Value: sessions.BoolValue(true)},
		{Key: "i", Value: sessions.Int64Value(-7)},
		{Key: "f", Value: sessions.Float64Value(2.5)},
		{Key: "s", Value: sessions.StringValue("lib/unit.o")},
		{Key: "bs", Value: sessions.SliceValue([]bool{true, false})},
		{Key: "is", Value: sessions.SliceValue([]int64{1, 2})},
		{Key: "fs", Value: sessions.SliceValue([]float64{0.5})},
		{Key: "ss", Value: sessions.SliceValue([]string{"a", ""})},
		{Key: "empty", Value: sessions.Value{}},
	}
	base := func() sessions.Record {
		return sessions.Record{
			Name:         "compile",
			Wall:         3 * time.Millisecond,
			Attributes:   every,
			TraceID:      sessions.TraceID{1, 15: 2},
			SpanID:       sessions.SpanID{0, 7: 3},
			ParentSpanID: sessions.SpanID{0, 7: 2},
			Scope:        sessions.Scope{Name: "build", Version: "1.2"},
			SpanKind:     "client",
		}
	}
	cases := map[string]func(*sessions.Record){
		"plain":         func(*sessions.Record) {},
		"root":          func(r *sessions.Record) { r.ParentSpanID = sessions.SpanID{} },
		"derived ids":   func(r *sessions.Record) { r.TraceID, r.SpanID = sessions.TraceID{}, sessions.SpanID{} },
		"no attributes": func(r *sessions.Record) { r.Attributes = nil },
		"changed":       func(r *sessions.Record) { r.Effect = sessions.Changed; r.Inputs = []string{"s", "i"} },
		"empty inputs":  func(r *sessions.Record) { r.Inputs = []string{} },
		"error": func(r *sessions.Record) {
			r.Status = sessions.Status{Code: spanbridge.StatusError, Description: "failed"}
		},
		"ok":             func(r *sessions.Record) { r.Status = sessions.Status{Code: spanbridge.StatusOK} },
		"unknown status": func(r *sessions.Record) { r.Status = sessions.Status{Code: "maybe"} },
		"no kind":        func(r *sessions.Record) { r.SpanKind = "" },
		"unknown kind":   func(r *sessions.Record) { r.SpanKind = "sideways" },
		"trace state":    func(r *sessions.Record) { r.TraceState = "vendor=a,other=b" },
		"bad state":      func(r *sessions.Record) { r.TraceState = "=,=" },
		"dropped":        func(r *sessions.Record) { r.DroppedAttributes, r.DroppedEvents, r.DroppedLinks = 1, 2, 3 },
		"events": func(r *sessions.Record) {
			r.Events = []sessions.Event{{Name: "retry", Offset: time.Millisecond, Attributes: every[:4]}, {Name: "done", Offset: -time.Second}}
		},
		"links": func(r *sessions.Record) {
			r.Links = []sessions.Link{{TraceID: sessions.TraceID{9}, SpanID: sessions.SpanID{8}, TraceState: "k=v", Attributes: every[:2]}}
		},
	}
	for name, edit := range cases {
		for _, kind := range []string{"artifact", "mark"} {
			t.Run(fmt.Sprintf("%s/%s", name, kind), func(t *testing.T) {
				rec := base()
				edit(&rec)
				st := sessions.Stamped[sessions.Record]{
					Stamp:  sessions.Stamp{Session: sessions.SessionID(1_733_000_000_000<<16 | 5), Seq: 41, Offset: 1500 * time.Microsecond},
					Record: rec,
				}
				fast, slow := ptrace.NewTraces(), ptrace.NewTraces()
				appendRecord(fast.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans(), kind, &st, nil)
				appendSpan(slow.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans(), spanbridge.Span(nil, kind, st))
				var m ptrace.JSONMarshaler
				a, err := m.MarshalTraces(fast)
				if err != nil {
					t.Fatal(err)
				}
				b, err := m.MarshalTraces(slow)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("appendRecord built\n%s\nappendSpan built\n%s", a, b)
				}
				if fast.SpanCount() != 1 {
					t.Errorf("%d spans, want 1", fast.SpanCount())
				}
			})
		}
	}
}
