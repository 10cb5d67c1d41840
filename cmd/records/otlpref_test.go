package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tracefile"
)

// referenceOTLP writes an OTLP JSON ExportTraceServiceRequest as records
// export did before package tracefile wrote it by hand: the spans made by
// package replay, turned into OTLP's protobuf types by the OpenTelemetry
// OTLP exporter itself (through a Client that keeps them rather than send
// them), and every ResourceSpans marshalled by protojson. It is kept as
// the reference tracefile.WriteOTLP must agree with, byte for byte.
func referenceOTLP(ctx context.Context, w io.Writer, r *sessions.Records) error {
	ow := &otlpWriter{w: w}
	exp, err := otlptrace.New(ctx, ow)
	if err != nil {
		return err
	}
	field := (&coltracepb.ExportTraceServiceRequest{}).ProtoReflect().Descriptor().Fields().ByName("resource_spans").JSONName()
	if _, err := fmt.Fprintf(w, "{%q:[", field); err != nil {
		return err
	}
	if _, err := replay.Replay(ctx, r, exp, replay.Options{}); err != nil {
		return err
	}
	if err := exp.Shutdown(ctx); err != nil {
		return err
	}
	if err := ow.flush(); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n]}\n")
	return err
}

// otlpWriter is an otlptrace.Client that writes what it is given as the
// resourceSpans of an OTLP JSON file, one per line, instead of sending it.
// The exporter hands it a batch at a time, a batch may hold the end of one
// session and the start of the next, and a session may span many batches:
// it merges a session's batches into one ResourceSpans, up to
// tracefile.MaxSpansPerResource spans, and writes it when the next session begins.
// Its methods are called from one goroutine, the one running the export.
type otlpWriter struct {
	w       io.Writer
	cur     *tracepb.ResourceSpans // the session being gathered, or nil
	curID   string                 // its records.session.id
	spans   int                    // how many spans cur holds
	bytes   int                    // cur's size in protobuf
	written int                    // how many ResourceSpans were written
}

func (*otlpWriter) Start(context.Context) error { return nil }
func (*otlpWriter) Stop(context.Context) error  { return nil }

// UploadTraces takes one batch, whose ResourceSpans come in no particular
// order (the exporter groups them in a map): they are put back in session
// order before they are merged.
func (ow *otlpWriter) UploadTraces(_ context.Context, batch []*tracepb.ResourceSpans) error {
	slices.SortStableFunc(batch, func(a, b *tracepb.ResourceSpans) int {
		return cmp.Compare(sessionOrder(a), sessionOrder(b))
	})
	for _, rs := range batch {
		id, n, size := sessionAttr(rs), countSpans(rs), proto.Size(rs)
		if ow.cur != nil && id == ow.curID && ow.spans+n <= tracefile.MaxSpansPerResource && ow.bytes+size <= tracefile.MaxBytesPerResource {
			mergeScopes(ow.cur, rs)
			ow.spans, ow.bytes = ow.spans+n, ow.bytes+size
			continue
		}
		if err := ow.flush(); err != nil {
			return err
		}
		ow.cur, ow.curID, ow.spans, ow.bytes = rs, id, n, size
	}
	return nil
}

// flush writes the ResourceSpans being gathered, if any.
func (ow *otlpWriter) flush() error {
	if ow.cur == nil {
		return nil
	}
	b, err := otlpJSON(ow.cur)
	if err != nil {
		return err
	}
	sep := "\n"
	if ow.written > 0 {
		sep = ",\n"
	}
	ow.cur, ow.written = nil, ow.written+1
	if _, err := io.WriteString(ow.w, sep); err != nil {
		return err
	}
	_, err = ow.w.Write(b)
	return err
}

// sessionAttr returns the records.session.id of a ResourceSpans' Resource.
func sessionAttr(rs *tracepb.ResourceSpans) string {
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == string(spanbridge.SessionIDKey) {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// sessionOrder returns the session id of a ResourceSpans as a number, so
// sessions sort by start.
func sessionOrder(rs *tracepb.ResourceSpans) uint64 {
	n, _ := strconv.ParseUint(sessionAttr(rs), 10, 64)
	return n
}

func countSpans(rs *tracepb.ResourceSpans) int {
	n := 0
	for _, ss := range rs.GetScopeSpans() {
		n += len(ss.GetSpans())
	}
	return n
}

// mergeScopes adds the spans of from to into, under the same scope.
func mergeScopes(into, from *tracepb.ResourceSpans) {
	for _, ss := range from.GetScopeSpans() {
		i := slices.IndexFunc(into.ScopeSpans, func(x *tracepb.ScopeSpans) bool {
			return x.GetSchemaUrl() == ss.GetSchemaUrl() && proto.Equal(x.GetScope(), ss.GetScope())
		})
		if i < 0 {
			into.ScopeSpans = append(into.ScopeSpans, ss)
			continue
		}
		into.ScopeSpans[i].Spans = append(into.ScopeSpans[i].Spans, ss.Spans...)
	}
}

// otlpJSON returns a ResourceSpans as OTLP JSON. protojson gives the
// protobuf JSON mapping; OTLP/JSON differs from it in one point, which is
// fixed after: trace and span ids are hex, not base64. Enums are written
// as numbers, which OTLP/JSON requires. The result is re-encoded by
// encoding/json, which also makes it byte-stable: protojson varies its
// whitespace on purpose.
func otlpJSON(rs *tracepb.ResourceSpans) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(rs)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep every number exactly as protojson wrote it
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := hexIDs(v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// otlpIDFields are the fields of OTLP's trace messages (Span, Span.Link)
// that hold ids: bytes, which protojson writes in base64 and OTLP/JSON
// wants in hex. No other JSON key of a trace request has these names:
// attribute keys are values there, not keys.
var otlpIDFields = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// hexIDs rewrites, in place, every id field of a decoded OTLP JSON value
// from base64 to hex.
func hexIDs(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && otlpIDFields[k] {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("OTLP JSON: %s %q is not base64: %w", k, s, err)
				}
				x[k] = hex.EncodeToString(b)
				continue
			}
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// The bounds of a ResourceSpans, as the tests name them.
const (
	otlpSpansPerResource = tracefile.MaxSpansPerResource
	otlpBytesPerResource = tracefile.MaxBytesPerResource
)

// writeValuesStore writes a session whose records hold every kind of
// value, at its edges, and every field a span can carry: what the OTLP
// JSON mapping writes each its own way.
func writeValuesStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "values")
	f := sessions.Float64Value
	attrs := sessions.Attrs{
		{Key: "", Value: sessions.StringValue("no key")},
		{Key: "b", Value: sessions.BoolValue(false)},
		{Key: "bs", Value: sessions.SliceValue([]bool{true, false})},
		{Key: "empty", Value: sessions.SliceValue[string](nil)},
		{Key: "f0", Value: f(0)}, {Key: "f-0", Value: f(math.Copysign(0, -1))},
		{Key: "f1e21", Value: f(1e21)}, {Key: "f1e-7", Value: f(1e-7)}, {Key: "f1.5", Value: f(1.5)},
		{Key: "fbig", Value: f(1e300)}, {Key: "fnan", Value: f(math.NaN())},
		{Key: "finf", Value: f(math.Inf(1))}, {Key: "f-inf", Value: f(math.Inf(-1))},
		{Key: "fs", Value: sessions.SliceValue([]float64{math.NaN(), 0.1, -2})},
		{Key: "i0", Value: sessions.Int64Value(0)}, {Key: "imax", Value: sessions.Int64Value(math.MaxInt64)},
		{Key: "imin", Value: sessions.Int64Value(math.MinInt64)},
		{Key: "is", Value: sessions.SliceValue([]int64{0, -5})},
		{Key: "s", Value: sessions.StringValue("a<b>&c \"q\" \\ \u2028\u2029 \x00\x1b\x7f \xff")},
		{Key: "s0", Value: sessions.StringValue("")},
		{Key: "ss", Value: sessions.SliceValue([]string{"", "x\xfe"})},
	}
	trace := sessions.TraceID{0: 1, 15: 2}
	recordSteps(t, dir, goldenStart1, "values \xff", sessions.Attrs{str("service.name", "values"), str("host.name", "h<1>")}, []step{
		{0, "root", sessions.Changed, sessions.Record{Name: "root", Wall: 9 * time.Millisecond, TraceID: trace, SpanID: sessions.SpanID{7: 1},
			Attributes: attrs, Status: sessions.Status{Code: "ok", Description: "fine"}, SpanKind: "server", TraceState: "a=1,b=2",
			Scope: sessions.Scope{Name: "scope"}, DroppedAttributes: 1}},
		{time.Millisecond, "child", sessions.Observed, sessions.Record{Name: "child", Wall: time.Millisecond, TraceID: trace,
			SpanID: sessions.SpanID{7: 2}, ParentSpanID: sessions.SpanID{7: 1}, SpanKind: "client",
			Scope:  sessions.Scope{Name: "scope", Version: "v1"},
			Events: []sessions.Event{{Name: "", Offset: 0}, {Name: "e \xff", Offset: -time.Millisecond, Attributes: attrs[:4]}},
			Links:  []sessions.Link{{TraceID: trace, SpanID: sessions.SpanID{7: 9}}, {Attributes: attrs[4:8]}},
			Status: sessions.Status{Code: "error"}, DroppedEvents: 2, DroppedLinks: 3}},
		{2 * time.Millisecond, "producer", sessions.Changed, sessions.Record{Name: "no ids", Wall: -time.Millisecond, SpanKind: "producer"}},
		{3 * time.Millisecond, "consumer", sessions.Changed, sessions.Record{Name: "", SpanKind: "consumer", Scope: sessions.Scope{Version: "v only"}}},
		{4 * time.Millisecond, sessions.MarksKind, sessions.Observed, sessions.Record{Name: "mark", Wall: 4 * time.Millisecond}},
	})
	recordSteps(t, dir, goldenStart2, "", nil, []step{
		{0, "internal", sessions.Changed, sessions.Record{Name: "internal", Wall: time.Second, SpanKind: "internal"}},
	})
	return dir
}

// TestWriteOTLPMatchesTheExporter holds tracefile.WriteOTLP, which writes
// OTLP JSON by hand, to what the OTLP exporter's messages, marshalled by
// protojson, made of the same spans: byte for byte, on stores of every
// value and field a span carries, and of sessions split in several
// ResourceSpans, by their count of spans and by their size.
func TestWriteOTLPMatchesTheExporter(t *testing.T) {
	for name, dir := range map[string]string{
		"golden":   writeGoldenStore(t),
		"fidelity": writeStore(t),
		"values":   writeValuesStore(t),
		"many":     writeManyRecords(t, otlpSpansPerResource+1500),
		"huge":     writeHugeRecords(t, 12, 1<<20),
		"large":    writeHugeRecords(t, 3000, 2000),
	} {
		t.Run(name, func(t *testing.T) {
			st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			r := sessions.NewRecords(st)
			var want, got bytes.Buffer
			if err := referenceOTLP(context.Background(), &want, r); err != nil {
				t.Fatal(err)
			}
			if _, err := tracefile.WriteOTLP(context.Background(), &got, r, tracefile.Options{}); err != nil {
				t.Fatal(err)
			}
			if g, w := got.String(), want.String(); g != w {
				i := 0
				for i < min(len(g), len(w)) && g[i] == w[i] {
					i++
				}
				from := max(i-200, 0)
				t.Fatalf("byte %d (line %d) differs from the exporter's:\n got …%s…\nwant …%s…",
					i, strings.Count(g[:i], "\n")+1, g[from:min(i+100, len(g))], w[from:min(i+100, len(w))])
			}
		})
	}
}

// TestWriteOTLPSplitsAtTheExportersBytes holds WriteOTLP's count of a
// ResourceSpans' bytes to protobuf's, to the byte: spans sized so that two
// make a ResourceSpans of exactly MaxBytesPerResource, which the exporter
// keeps together, and then a byte larger, which it splits.
func TestWriteOTLPSplitsAtTheExportersBytes(t *testing.T) {
	write := func(n, payload int) string {
		dir := filepath.Join(t.TempDir(), "store")
		steps := make([]step, n)
		for i := range steps {
			rec := sessions.Record{Name: "step", Wall: time.Millisecond, TraceID: sessions.TraceID{15: 1},
				SpanID: sessions.SpanID{7: byte(i + 2)}, ParentSpanID: sessions.SpanID{7: 1}, SpanKind: "client", TraceState: "a=1",
				Status: sessions.Status{Code: "error", Description: "failed"}, DroppedAttributes: 300,
				Attributes: sessions.Attrs{str("payload", strings.Repeat("p", payload)), integer("n", -i-1), {Key: "f", Value: sessions.Float64Value(0.5)},
					{Key: "bs", Value: sessions.SliceValue([]bool{true})}},
				Events: []sessions.Event{{Name: "e", Offset: time.Microsecond, Attributes: sessions.Attrs{integer("i", 1<<40)}}},
				Links:  []sessions.Link{{TraceID: sessions.TraceID{0: 9}, SpanID: sessions.SpanID{0: 9}, Attributes: sessions.Attrs{str("why", "x")}}},
				Scope:  sessions.Scope{Name: "s", Version: "v"}}
			steps[i] = step{time.Duration(i) * time.Millisecond, "work", sessions.Changed, rec}
		}
		recordSteps(t, dir, goldenStart1, "sized", nil, steps)
		// Sized by its records alone: the session's tally, a span of
		// its own, would change what a ResourceSpans holds.
		st, err := badgerstore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.DeleteRange(keys.NamespaceStart(keys.Sessions), keys.NamespaceEnd(keys.Sessions), keys.IsTally); err != nil {
			t.Fatal(err)
		}
		st.Close()
		return dir
	}
	export := func(dir string, reference bool) (string, *coltracepb.ExportTraceServiceRequest) {
		st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var b bytes.Buffer
		if reference {
			err = referenceOTLP(context.Background(), &b, sessions.NewRecords(st))
		} else {
			_, err = tracefile.WriteOTLP(context.Background(), &b, sessions.NewRecords(st), tracefile.Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
		return b.String(), decodeOTLP(t, b.Bytes())
	}
	// A span over the 1 MiB of a replay's batch is a batch, and a
	// ResourceSpans as the exporter made it, of its own: size one so that
	// two make exactly the bound.
	payload := 3 << 19
	for range 4 {
		_, req := export(write(1, payload), true)
		payload += otlpBytesPerResource/2 - proto.Size(req.ResourceSpans[0])
	}
	// At the bound, two spans go together; a byte over it, each alone.
	for extra, resources := range []int{2, 3} {
		dir := write(3, payload+extra)
		want, req := export(dir, true)
		if len(req.ResourceSpans) != resources {
			t.Fatalf("spans %d bytes over half the bound: the exporter's file holds %d ResourceSpans, want %d", extra, len(req.ResourceSpans), resources)
		}
		if got, _ := export(dir, false); got != want {
			t.Errorf("spans %d bytes over half the bound: WriteOTLP split them otherwise than the exporter (%d bytes, the exporter's %d)", extra, len(got), len(want))
		}
	}
}
