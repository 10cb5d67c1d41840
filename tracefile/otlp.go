package tracefile

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// How much one ResourceSpans of an OTLP JSON file holds at most: spans,
// and bytes of OTLP protobuf (the request it would be, which a gRPC
// receiver takes up to 4 MiB of by default). A larger session is split,
// with the same Resource, so the export never holds more than about this
// much in memory, however large the records' values (a span of one huge
// value is a ResourceSpans of its own).
const (
	MaxSpansPerResource = 10_000
	MaxBytesPerResource = 4 << 20
)

// WriteOTLP writes the sessions of the store to w as OTLP JSON: one
// ExportTraceServiceRequest, in the protobuf JSON mapping as OTLP/HTTP
// takes it, which a Collector's OTLP/HTTP receiver accepts as is. Each
// session is a ResourceSpans and each record a span, exactly as records
// replay sends them: the spans are package replay's, repaired as it
// repairs strings that are not UTF-8, which OTLP cannot carry. It returns
// how far the replay got (the spans written, what was repaired).
//
// The request is written as it goes, a ResourceSpans a line: a session of
// more than MaxSpansPerResource records, or MaxBytesPerResource bytes, is
// split into several with the same Resource.
func WriteOTLP(ctx context.Context, w io.Writer, r *sessions.Records, o Options) (replay.Progress, error) {
	if err := o.check(r); err != nil {
		return replay.Progress{}, err
	}
	ow := &otlpWriter{w: w}
	if _, err := io.WriteString(w, `{"resourceSpans":[`); err != nil {
		return replay.Progress{}, err
	}
	ro := replay.Options{Sessions: o.Sessions}
	if o.Progress != nil {
		ro.Progress = func(p replay.Progress) { o.Progress(Progress{Records: int64(p.Spans)}) }
	}
	p, err := replay.Replay(ctx, r, ow, ro)
	if err != nil {
		return p, err
	}
	if err := ow.flush(); err != nil {
		return p, err
	}
	_, err = io.WriteString(w, "\n]}\n")
	return p, err
}

// otlpWriter is a SpanExporter that writes what it is given as the
// resourceSpans of an OTLP JSON file, one per line. A batch may hold the
// end of one session and the start of the next, and a session may span
// many batches: it merges a session's batches into one ResourceSpans, up
// to MaxSpansPerResource spans and MaxBytesPerResource bytes, and writes
// it when the next session begins. Its methods are called from one
// goroutine, the one running the replay.
type otlpWriter struct {
	w       io.Writer
	cur     *resourceSpans // the session being gathered, or nil
	written int            // how many ResourceSpans were written
	enc     jsonEncoder
}

// resourceSpans is a ResourceSpans being gathered: its Resource, and its
// scopes' spans, encoded; how many spans it holds, and its size in
// protobuf.
type resourceSpans struct {
	session   string // its records.session.id
	resource  []byte
	schemaURL string
	scopes    []*scopeSpans
	spans     int
	bytes     int
}

// scopeSpans is a scope of a ResourceSpans, and its spans, encoded and
// joined by commas; the sizes in protobuf of its scope and of the spans
// one batch gave it.
type scopeSpans struct {
	scope     []byte // nil for none
	schemaURL string
	spans     []byte
	scopeSize int // -1 for none
	spanBytes int
	res       attribute.Distinct // its Resource's, while its batch is taken
}

// ExportSpans takes one batch. Its spans are grouped by Resource, and by
// scope within each, in the order they come (as the OTLP exporter groups
// them); the Resources are then taken in session order.
func (ow *otlpWriter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	var batch []*resourceSpans
	byRes := map[attribute.Distinct]*resourceSpans{}
	byScope := map[scopeKey]*scopeSpans{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rs := byRes[res.Equivalent()]
		if rs == nil {
			attrs := keyValuesOf(res.Iter())
			b, err := ow.enc.encode(resourceJSON{Attributes: attrs})
			if err != nil {
				return err
			}
			rs = &resourceSpans{resource: b, schemaURL: res.SchemaURL()}
			rs.bytes = lenField(1, keyValuesSize(1, attrs)) + strField(3, len(rs.schemaURL))
			if v, ok := res.Set().Value(spanbridge.SessionIDKey); ok {
				rs.session = v.AsString()
			}
			byRes[res.Equivalent()] = rs
			batch = append(batch, rs)
		}
		k := scopeKey{res.Equivalent(), s.InstrumentationScope()}
		ss := byScope[k]
		if ss == nil {
			ss = &scopeSpans{schemaURL: k.scope.SchemaURL, scopeSize: -1, res: k.res}
			if sc := newScope(k.scope); sc != nil {
				b, err := ow.enc.encode(sc)
				if err != nil {
					return err
				}
				ss.scope, ss.scopeSize = b, sc.protoSize()
			}
			byScope[k] = ss
			rs.scopes = append(rs.scopes, ss)
		}
		sj := newSpan(s)
		b, err := ow.enc.encode(sj)
		if err != nil {
			return err
		}
		if len(ss.spans) > 0 {
			ss.spans = append(ss.spans, ',')
		}
		ss.spans = append(ss.spans, b...)
		ss.spanBytes += lenField(2, sj.protoSize())
		rs.spans++
	}
	for _, ss := range byScope {
		n := ss.spanBytes + strField(3, len(ss.schemaURL))
		if ss.scopeSize >= 0 {
			n += lenField(1, ss.scopeSize)
		}
		byRes[ss.res].bytes += lenField(2, n)
	}
	slices.SortStableFunc(batch, func(a, b *resourceSpans) int { return cmp.Compare(sessionOrder(a), sessionOrder(b)) })
	for _, rs := range batch {
		if c := ow.cur; c != nil && rs.session == c.session && c.spans+rs.spans <= MaxSpansPerResource && c.bytes+rs.bytes <= MaxBytesPerResource {
			c.merge(rs)
			continue
		}
		if err := ow.flush(); err != nil {
			return err
		}
		ow.cur = rs
	}
	return nil
}

// Shutdown does nothing: WriteOTLP writes what is gathered.
func (*otlpWriter) Shutdown(context.Context) error { return nil }

// sessionOrder returns the session id of a ResourceSpans as a number, so
// sessions sort by start.
func sessionOrder(rs *resourceSpans) uint64 {
	n, _ := strconv.ParseUint(rs.session, 10, 64)
	return n
}

// merge adds the spans of from to rs, under the same scope.
func (rs *resourceSpans) merge(from *resourceSpans) {
	for _, ss := range from.scopes {
		i := slices.IndexFunc(rs.scopes, func(x *scopeSpans) bool {
			return x.schemaURL == ss.schemaURL && bytes.Equal(x.scope, ss.scope) && (x.scope == nil) == (ss.scope == nil)
		})
		if i < 0 {
			rs.scopes = append(rs.scopes, ss)
			continue
		}
		rs.scopes[i].spans = append(append(rs.scopes[i].spans, ','), ss.spans...)
	}
	rs.spans += from.spans
	rs.bytes += from.bytes
}

// flush writes the ResourceSpans being gathered, if any: its fields in
// the mapping's alphabetical order, as every message of the file.
func (ow *otlpWriter) flush() error {
	rs := ow.cur
	if rs == nil {
		return nil
	}
	ow.cur = nil
	var b bytes.Buffer
	if ow.written > 0 {
		b.WriteString(",")
	}
	ow.written++
	b.WriteString("\n{\"resource\":")
	b.Write(rs.resource)
	if rs.schemaURL != "" {
		b.WriteString(`,"schemaUrl":`)
		b.Write(ow.enc.str(rs.schemaURL))
	}
	b.WriteString(`,"scopeSpans":[`)
	for i, ss := range rs.scopes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		sep := ""
		if ss.schemaURL != "" {
			b.WriteString(`"schemaUrl":`)
			b.Write(ow.enc.str(ss.schemaURL))
			sep = ","
		}
		if ss.scope != nil {
			b.WriteString(sep + `"scope":`)
			b.Write(ss.scope)
			sep = ","
		}
		b.WriteString(sep + `"spans":[`)
		b.Write(ss.spans)
		b.WriteString("]}")
	}
	b.WriteString("]}")
	_, err := ow.w.Write(b.Bytes())
	return err
}

// jsonEncoder encodes values as the file holds them: without escaping
// HTML's characters, each into bytes of its own.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func (e *jsonEncoder) encode(v any) ([]byte, error) {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))), nil
}

// str encodes a string; a string always encodes.
func (e *jsonEncoder) str(s string) []byte {
	b, _ := e.encode(s)
	return b
}
