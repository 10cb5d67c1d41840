// Package instruments is the one table of the metrics otelrecords
// publishes: each instrument's name, kind, unit and meaning, and the Stats
// field each of its series reads. The Go SDK's SpanProcessor
// (exporter.WithMeterProvider, under PrefixSDK) and the Collector's
// component (its own telemetry, under PrefixCollector) both register it
// with Register, so a name below the prefix means one thing in both, and
// "dropped" names one thing: records let go unstored, by cause.
//
// It is the Collector's metadata.yaml convention (a component's telemetry
// declared as data, code made from it) written as Go, because the table
// serves a Go SDK meter as well as the Collector's, and the release's
// mdatagen (go.opentelemetry.io/collector/cmd/mdatagen v0.165.0) is not on
// the module proxy. docs/COLLECTOR.md lists the table as its test renders
// it. A program reads it to build dashboards or alerts:
//
//	for _, in := range instruments.Of(instruments.SDK) {
//		fmt.Println(instruments.PrefixSDK+in.Name, in.Unit, in.Description)
//	}
package instruments

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Where is the set of components that publish an instrument.
type Where uint8

const (
	// SDK is the Go SDK's SpanProcessor (package exporter).
	SDK Where = 1 << iota
	// Collector is the Collector's component, through its Importer.
	Collector
	// Both is every component.
	Both = SDK | Collector
)

// String names w as the docs do: "SDK", "Collector" or "both".
func (w Where) String() string {
	switch w {
	case SDK:
		return "SDK"
	case Collector:
		return "Collector"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Where(%d)", uint8(w))
}

// The prefixes the components put before the table's names: the
// Collector's convention names a component's own telemetry under
// "otelcol."; a Go program's metrics carry the project's name.
const (
	PrefixSDK       = "otelrecords."
	PrefixCollector = "otelcol.records."
)

// Prefix returns the prefix of w's names (w one component).
func Prefix(w Where) string {
	if w == Collector {
		return PrefixCollector
	}
	return PrefixSDK
}

// Kind is how an instrument's values move.
type Kind uint8

const (
	// Counter only grows: a cumulative sum of what happened.
	Counter Kind = iota
	// Gauge is how much there is now.
	Gauge
)

// Point is one series of an instrument: the Stats field it reads and the
// attribute that tells it from the instrument's other series (Key empty
// for an instrument of one series).
type Point struct {
	Key, Value string
	Field      string
}

// Instrument is one row of the table.
type Instrument struct {
	// Name is below the component's prefix.
	Name        string
	Kind        Kind
	Unit        string
	Description string
	Where       Where
	Points      []Point
}

// one is the single series of an instrument that reads field.
func one(field string) []Point { return []Point{{Field: field}} }

// DroppedName is the one instrument whose name says "dropped".
const DroppedName = "records.dropped"

// table is every instrument, in the order the docs list them; Of gives
// a copy, so that no program changes what the components register.
var table = []Instrument{
	{"spans.accepted", Counter, "{span}", "Spans taken (recorded, held, or recognised as taken before).", Collector, one("Accepted")},
	{"spans.deduplicated", Counter, "{span}", "Accepted spans taken before (a retry, a queue's replay, a span repeated in a batch): recorded once.", Collector, one("Duplicates")},
	{"spans.rejected", Counter, "{span}", "Spans no record can be made of (no valid trace or span id): never recorded.", Collector, one("Rejected")},
	{"spans.refused", Counter, "{span}", "Spans refused, whole batches at a time, while the store refused writes: the sender was told to retry.", Collector, one("Refused")},
	{"records.written", Counter, "{record}", "Records the store acknowledged.", Both, one("Written")},
	{"records.spooled", Counter, "{record}", "Records set aside in the store's spool (another process held the store, or it failed writes); the next opener writes them.", Both, one("Spooled")},
	{DroppedName, Counter, "{record}", "Records let go unstored, by cause: queue_full (an ended span the SDK's full queue lost; 0 in the Collector, which has no such queue), evicted (held, not kept yet, past the pending budget or the held bound), too_large (over 15 MiB encoded), invalid (an invalid kind), unwritable (the store and its spool failed writes).", Both, []Point{
		{"cause", "queue_full", "Dropped"},
		{"cause", "evicted", "Evicted"},
		{"cause", "too_large", "TooLarge"},
		{"cause", "invalid", "Invalid"},
		{"cause", "unwritable", "Unwritable"},
	}},
	{"records.problems", Counter, "{span}", "Spans with invalid control attributes (recorded as documented), that may have lost records.effect to the attribute limit, or that failed to record.", Both, one("Problems")},
	{"records.tallied", Counter, "{record}", "Records keep-what-changed let go that were counted in the session's tally (written only if the session is kept): held records pushed out, spans of a session not kept let go by the held bound while they waited for their parent, records of traces let go, implicit marks let go.", Both, one("Tallied")},
	{"records.trimmed", Counter, "{record}", "Records of a kept session deleted to keep the store within its byte bound.", Both, one("TrimmedRecords")},
	{"sessions.kept", Counter, "{session}", "Sessions kept because they changed something (the SDK's one session: 1 once kept; the Collector: summed over senders).", Both, one("SessionsKept")},
	{"sessions.trimmed", Counter, "{session}", "Other sessions deleted to keep the store within its byte bound.", Both, one("TrimmedSessions")},
	{"traces.seen", Counter, "{trace}", "Traces that had records under keep-by-trace: each is kept, unchanged or evicted (or held still).", Both, one("TracesSeen")},
	{"traces.kept", Counter, "{trace}", "Traces kept under keep-by-trace because one of their records changed something.", Both, one("TracesKept")},
	{"traces.unchanged", Counter, "{trace}", "Traces let go under keep-by-trace because nothing in them changed (their root ended and the grace passed): the policy's choice, not a loss.", Both, one("TracesDropped")},
	{"traces.evicted", Counter, "{trace}", "Held traces pushed out by the pending budget before they were decided (their records count in records.dropped, cause evicted).", Both, one("TracesEvicted")},
	{"store.opens", Counter, "{open}", "Times the store was opened.", Both, one("StoreOpens")},
	{"store.busy_waits", Counter, "{wait}", "Writes that found the store held by another process and waited for it (normal operation).", Both, one("BusyWaits")},
	{"store.write_errors", Counter, "{error}", "Failed opens or writes of the store (retried).", Both, one("WriteErrors")},
	{"store.bytes", Gauge, "By", "The store's size as its byte bound counts it (0 without one).", Both, one("StoreBytes")},
	{"records.held", Gauge, "{record}", "Records held in memory, waiting for a change.", Both, one("Held")},
	{"held.bytes", Gauge, "By", "Bytes held in memory against their bound: in the SDK, the held records against the pending budget; in the Collector, everything held for every sender (spans waiting for their parents included) against max_held_bytes.", Both, one("HeldBytes")},
	{"spans.waiting", Gauge, "{span}", "Spans waiting for their parents.", Collector, one("HeldSpans")},
	{"sessions", Gauge, "{session}", "Senders' sessions in memory (state=active), let go while quiet (state=parked), or ended within the dedup window (state=ended).", Collector, []Point{
		{"state", "active", "Sessions"},
		{"state", "parked", "Parked"},
		{"state", "ended", "Ended"},
	}},
	{"dedup.spans", Gauge, "{span}", "Spans remembered to take each once if delivered again, within dedup_window.", Collector, one("SeenSpans")},
	{"dedup.bytes", Gauge, "By", "Memory the remembered spans take, against dedup_max_bytes.", Collector, one("SeenBytes")},
	{"dedup.forgotten", Counter, "{span}", "Spans forgotten before dedup_window passed, to stay within dedup_max_bytes: one delivered again would be stored again.", Collector, one("ForgottenEarly")},
}

// Of returns the instruments w publishes, in the table's order: a copy,
// which the caller may change.
func Of(w Where) []Instrument {
	var out []Instrument
	for _, in := range table {
		if in.Where&w != 0 {
			in.Points = slices.Clone(in.Points)
			out = append(out, in)
		}
	}
	return out
}

// series is one registered point: where its value is in S, and how it
// is told from the instrument's other points.
type series struct {
	index []int
	opt   metric.MeasurementOption
}

// Register creates w's instruments on m, named under w's prefix, and one
// callback that reads every series from stats when the meter's reader
// collects: nothing is counted on the span path. Every point carries
// attrs besides its own (the Collector's component ID). S is the
// component's Stats, a struct whose integer fields (promoted ones
// included) the table names; a field the table names that S lacks is an
// error, as is an instrument the meter refuses.
func Register[S any](m metric.Meter, w Where, stats func() S, attrs ...attribute.KeyValue) (metric.Registration, error) {
	typ := reflect.TypeFor[S]()
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("instruments: %s is not a struct", typ)
	}
	prefix := Prefix(w)
	var (
		counters []metric.Int64ObservableCounter
		gauges   []metric.Int64ObservableGauge
		all      []metric.Observable
		reads    [][]series
	)
	for _, in := range Of(w) {
		var pts []series
		for _, p := range in.Points {
			f, ok := typ.FieldByName(p.Field)
			if !ok || f.Type.Kind() < reflect.Int || f.Type.Kind() > reflect.Int64 {
				return nil, fmt.Errorf("instruments: %s reads %s.%s, which is not an integer field", in.Name, typ, p.Field)
			}
			kv := attrs
			if p.Key != "" {
				kv = append(append([]attribute.KeyValue(nil), attrs...), attribute.String(p.Key, p.Value))
			}
			pts = append(pts, series{f.Index, metric.WithAttributeSet(attribute.NewSet(kv...))})
		}
		reads = append(reads, pts)
		name, unit, desc := prefix+in.Name, metric.WithUnit(in.Unit), metric.WithDescription(in.Description)
		switch in.Kind {
		case Counter:
			c, err := m.Int64ObservableCounter(name, unit, desc)
			if err != nil {
				return nil, err
			}
			counters, gauges = append(counters, c), append(gauges, nil)
			all = append(all, c)
		default:
			g, err := m.Int64ObservableGauge(name, unit, desc)
			if err != nil {
				return nil, err
			}
			counters, gauges = append(counters, nil), append(gauges, g)
			all = append(all, g)
		}
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		v := reflect.ValueOf(stats())
		for i, pts := range reads {
			for _, p := range pts {
				n := v.FieldByIndex(p.index).Int()
				if counters[i] != nil {
					o.ObserveInt64(counters[i], n, p.opt)
				} else {
					o.ObserveInt64(gauges[i], n, p.opt)
				}
			}
		}
		return nil
	}, all...)
}
