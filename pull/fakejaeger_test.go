package pull_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// fakeJaeger answers api_v3 as Jaeger v1.76's query service does over its
// memory storage: traces kept as received (OTLP), found by service and by
// a span's start within [start_time_min, start_time_max], the most
// recently received first, at most num_traces; "No traces found" with a
// 404; errors as {"error": {...}}. The real one is tested in cmd/records.
type fakeJaeger struct {
	mu     sync.Mutex
	traces []trace.TraceID // in the order first received
	spans  map[trace.TraceID][]sdktrace.ReadOnlySpan
}

func newFakeJaeger(t *testing.T) (*fakeJaeger, *httptest.Server) {
	j := newFake()
	srv := httptest.NewServer(j)
	t.Cleanup(srv.Close)
	return j, srv
}

func newFake() *fakeJaeger {
	return &fakeJaeger{spans: map[trace.TraceID][]sdktrace.ReadOnlySpan{}}
}

// ExportSpans and Shutdown make the fake an exporter replay can send to,
// as its OTLP receiver.
func (j *fakeJaeger) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	j.add(spans)
	return nil
}

func (j *fakeJaeger) Shutdown(context.Context) error { return nil }

func (j *fakeJaeger) add(spans []sdktrace.ReadOnlySpan) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, s := range spans {
		id := s.SpanContext().TraceID()
		if _, ok := j.spans[id]; !ok {
			j.traces = append(j.traces, id)
		}
		j.spans[id] = append(j.spans[id], s)
	}
}

func service(s sdktrace.ReadOnlySpan) string {
	v, _ := s.Resource().Set().Value("service.name")
	return v.AsString()
}

func (j *fakeJaeger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fail := func(code int, msg string) {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"httpCode": code, "message": msg}})
		http.Error(w, string(b), code)
	}
	switch r.URL.Path {
	case "/api/v3/services":
		var names []string
		for _, spans := range j.spans {
			for _, s := range spans {
				if n := service(s); !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		slices.Sort(names)
		json.NewEncoder(w).Encode(map[string]any{"services": names})
	case "/api/v3/traces":
		q := r.URL.Query()
		from, err1 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_min"))
		to, err2 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_max"))
		n, err3 := strconv.Atoi(q.Get("query.num_traces"))
		if err1 != nil || err2 != nil || err3 != nil || n <= 0 || q.Get("query.raw_traces") != "true" {
			fail(http.StatusBadRequest, "malformed parameters")
			return
		}
		var found [][]sdktrace.ReadOnlySpan
		for i := len(j.traces) - 1; i >= 0 && len(found) < n; i-- {
			spans := j.spans[j.traces[i]]
			if slices.ContainsFunc(spans, func(s sdktrace.ReadOnlySpan) bool {
				return service(s) == q.Get("query.service_name") && !s.StartTime().Before(from) && !s.StartTime().After(to)
			}) {
				found = append(found, spans)
			}
		}
		if len(found) == 0 {
			fail(http.StatusNotFound, "No traces found")
			return
		}
		var rss []any
		for _, spans := range found {
			rss = append(rss, otlpJSON(spans)...)
		}
		json.NewEncoder(w).Encode(map[string]any{"result": map[string]any{"resourceSpans": rss}})
	default:
		http.NotFound(w, r)
	}
}

// otlpJSON writes spans as OTLP JSON ResourceSpans, as pdata writes them:
// one per Resource, a ScopeSpans per scope, in the order the spans came,
// ids in hex, 64-bit integers and times as strings, non-finite doubles as
// strings.
func otlpJSON(spans []sdktrace.ReadOnlySpan) []any {
	var out []any
	type scoped struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	byRes := map[*resource.Resource]*[]any{}
	byScope := map[scoped]*[]any{}
	for _, s := range spans {
		scopes, ok := byRes[s.Resource()]
		if !ok {
			scopes = &[]any{}
			byRes[s.Resource()] = scopes
			out = append(out, map[string]any{
				"resource":   map[string]any{"attributes": kvsJSON(s.Resource().Attributes())},
				"scopeSpans": scopes,
			})
		}
		key := scoped{s.Resource(), s.InstrumentationScope()}
		list, ok := byScope[key]
		if !ok {
			list = &[]any{}
			byScope[key] = list
			*scopes = append(*scopes, map[string]any{"scope": map[string]any{"name": key.scope.Name, "version": key.scope.Version}, "spans": list})
		}
		*list = append(*list, spanJSON(s))
	}
	return out
}

func spanJSON(s sdktrace.ReadOnlySpan) map[string]any {
	sc := s.SpanContext()
	m := map[string]any{
		"traceId":                sc.TraceID().String(),
		"spanId":                 sc.SpanID().String(),
		"name":                   s.Name(),
		"kind":                   int(s.SpanKind()),
		"startTimeUnixNano":      strconv.FormatInt(s.StartTime().UnixNano(), 10),
		"endTimeUnixNano":        strconv.FormatInt(s.EndTime().UnixNano(), 10),
		"attributes":             kvsJSON(s.Attributes()),
		"droppedAttributesCount": s.DroppedAttributes(),
		"droppedEventsCount":     s.DroppedEvents(),
		"droppedLinksCount":      s.DroppedLinks(),
		"status":                 map[string]any{},
	}
	if ts := sc.TraceState().String(); ts != "" {
		m["traceState"] = ts
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		m["parentSpanId"] = p.SpanID().String()
	}
	switch s.Status().Code {
	case codes.Ok:
		m["status"] = map[string]any{"code": 1}
	case codes.Error:
		m["status"] = map[string]any{"code": 2, "message": s.Status().Description}
	}
	var events []any
	for _, e := range s.Events() {
		events = append(events, map[string]any{"name": e.Name, "timeUnixNano": strconv.FormatInt(e.Time.UnixNano(), 10), "attributes": kvsJSON(e.Attributes)})
	}
	if events != nil {
		m["events"] = events
	}
	var links []any
	for _, l := range s.Links() {
		link := map[string]any{"traceId": l.SpanContext.TraceID().String(), "spanId": l.SpanContext.SpanID().String(), "attributes": kvsJSON(l.Attributes)}
		if ts := l.SpanContext.TraceState().String(); ts != "" {
			link["traceState"] = ts
		}
		links = append(links, link)
	}
	if links != nil {
		m["links"] = links
	}
	return m
}

func kvsJSON(kvs []attribute.KeyValue) []any {
	out := []any{}
	for _, kv := range kvs {
		out = append(out, map[string]any{"key": string(kv.Key), "value": valueJSON(kv.Value)})
	}
	return out
}

func valueJSON(v attribute.Value) map[string]any {
	switch v.Type() {
	case attribute.BOOL:
		return map[string]any{"boolValue": v.AsBool()}
	case attribute.INT64:
		return map[string]any{"intValue": strconv.FormatInt(v.AsInt64(), 10)}
	case attribute.FLOAT64:
		return map[string]any{"doubleValue": doubleJSON(v.AsFloat64())}
	case attribute.STRING:
		return map[string]any{"stringValue": v.AsString()}
	case attribute.BOOLSLICE:
		return arrayJSON(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayJSON(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayJSON(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayJSON(v.AsStringSlice(), attribute.StringValue)
	}
	return map[string]any{}
}

func arrayJSON[T any](xs []T, wrap func(T) attribute.Value) map[string]any {
	vs := []any{}
	for _, x := range xs {
		vs = append(vs, valueJSON(wrap(x)))
	}
	if len(vs) == 0 {
		return map[string]any{"arrayValue": map[string]any{}}
	}
	return map[string]any{"arrayValue": map[string]any{"values": vs}}
}

func doubleJSON(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}
