package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// traces is one sender's build as OTLP: a root, a phase, and a changed
// artifact record whose batch comes before its parents'.
func traces(pid int64, children bool) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "node-build")
	rs.Resource().Attributes().PutInt("process.pid", pid)
	rs.Resource().Attributes().PutStr("os.type", "linux")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("build")
	start := pcommon.NewTimestampFromTime(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	add := func(name string, id, parent byte, attrs map[string]any) {
		s := ss.Spans().AppendEmpty()
		s.SetName(name)
		s.SetTraceID(pcommon.TraceID{byte(pid), 1})
		s.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, id})
		if parent != 0 {
			s.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, parent})
		}
		s.SetStartTimestamp(start)
		s.SetEndTimestamp(start + 1e6)
		if err := s.Attributes().FromRaw(attrs); err != nil {
			panic(err)
		}
	}
	if children {
		add("compile app", 3, 2, map[string]any{"records.kind": "artifact", "records.effect": "changed", "inputs": []any{"a.ts", "b.ts"}, "meta": map[string]any{"k": 1}})
	} else {
		add("build", 1, 0, nil)
		add("compile", 2, 1, map[string]any{"records.kind": "marks"})
		s := ss.Spans().At(1)
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage("tsc failed")
	}
	return td
}

// export runs the records exporter with cfg (its directory a new one)
// over tds, shuts it down, and opens the store it wrote.
func export(t *testing.T, edit func(*Config), tds ...ptrace.Traces) *sessions.Records {
	t.Helper()
	dir := t.TempDir()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Directory = dir
	edit(cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	exp, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(componentType), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	for _, td := range tds {
		if err := exp.ConsumeTraces(ctx, td); err != nil {
			t.Fatal(err)
		}
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return sessions.NewRecords(st)
}

func TestExporterRecordsSenderSessions(t *testing.T) {
	r := export(t, func(*Config) {}, traces(41, true), traces(41, false), traces(42, false))
	var rows []sessions.Session
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, s)
	}
	if len(rows) != 1 || rows[0].Process != 41 || rows[0].OS != "linux" {
		t.Fatalf("sessions %+v, want one: pid 41's, which changed something (pid 42 only observed)", rows)
	}
	byName := map[string]sessions.Record{}
	for _, kind := range []string{"marks", "artifact"} {
		for rec, err := range r.All(kind) {
			if err != nil {
				t.Fatal(err)
			}
			byName[rec.Record.Name] = rec.Record
		}
	}
	art, phase := byName["compile app"], byName["compile"]
	if art.ParentSpanID != phase.SpanID || phase.ParentSpanID != byName["build"].SpanID || phase.SpanID == (sessions.SpanID{}) {
		t.Fatalf("records do not nest: %+v", byName)
	}
	if phase.Status.Code != "error" || phase.Status.Description != "tsc failed" {
		t.Errorf("status %+v, want the error and its message", phase.Status)
	}
	got := map[string]string{}
	for _, kv := range art.Attributes {
		got[kv.Key] = kv.Value.String()
	}
	if !strings.Contains(got["inputs"], "a.ts") || !strings.Contains(got["meta"], `"k":1`) {
		t.Errorf("attributes %v: an array and a map should survive", got)
	}
}

func TestKeepByTrace(t *testing.T) {
	// One sender: a trace that changed something (pid 41's children and
	// root) and one that did not (a root and its mark only).
	warm := traces(41, false)
	warm.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetTraceID(pcommon.TraceID{9, 9})
	warm.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1).SetTraceID(pcommon.TraceID{9, 9})
	r := export(t, func(c *Config) { c.KeepBy = "trace" }, traces(41, true), traces(41, false), warm)
	n := 0
	for rec, err := range r.All("marks") {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Record.TraceID[0] == 9 {
			t.Errorf("a record of the unchanged trace was kept: %+v", rec.Record)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d marks kept, want the changed trace's 2", n)
	}
}
