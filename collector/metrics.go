package collector

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/otelrecords/otelrecords/importer"
)

// registerMetrics publishes what the Importer counts through the
// Collector's own telemetry (its MeterProvider, which names the
// component): spans accepted, deduplicated, rejected and refused; records
// written and spooled; what is held; what was dropped, by cause. They are
// observed when the Collector's reader collects: nothing is counted on
// the export path. It returns the function that unregisters them.
//
// The counters they share with the SpanProcessor's metrics
// (exporter/metrics.go, "otelrecords.") are read from the same Stats
// fields; docs/COLLECTOR.md maps one set of names to the other.
//
// Each carries the attribute exporter, the component's ID (records,
// records/fleet), as the Collector's own exporter metrics do.
func registerMetrics(mp metric.MeterProvider, id string, im *importer.Importer) (func() error, error) {
	m := mp.Meter("github.com/otelrecords/otelrecords/collector")
	var err error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, e := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if e != nil {
			err = e
		}
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, e := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if e != nil {
			err = e
		}
		return g
	}
	accepted := counter("otelcol.records.spans.accepted", "{span}", "Spans the records exporter took (recorded, held, or recognised as taken before).")
	duplicates := counter("otelcol.records.spans.deduplicated", "{span}", "Accepted spans taken before (a retry, a queue's replay, a span repeated in a batch): recorded once.")
	rejected := counter("otelcol.records.spans.rejected", "{span}", "Spans no record can be made of (no valid trace or span id): never recorded.")
	refused := counter("otelcol.records.spans.refused", "{span}", "Spans refused, whole batches at a time, while the store refused writes: the sender was told to retry.")
	written := counter("otelcol.records.records.written", "{record}", "Records the store acknowledged.")
	spooled := counter("otelcol.records.records.spooled", "{record}", "Records set aside in the store's spool (another process held the store); the next opener writes them.")
	dropped := counter("otelcol.records.records.dropped", "{record}", "Records let go, by cause: evicted (a session or trace not kept yet, past the held bound or the pending budget), too_large, invalid, unwritable.")
	kept := counter("otelcol.records.sessions.kept", "{session}", "Sessions kept: they changed something.")
	held := gauge("otelcol.records.held", "By", "Bytes held in memory for every sender, against max_held_bytes.")
	waiting := gauge("otelcol.records.spans.waiting", "{span}", "Spans waiting for their parents.")
	sessions := gauge("otelcol.records.sessions", "{session}", "Senders' sessions in memory (and, with state=parked, let go while quiet; with state=ended, ended within the dedup window).")
	remembered := gauge("otelcol.records.dedup.spans", "{span}", "Spans remembered to take each once if delivered again, within dedup_window.")
	rememberedBytes := gauge("otelcol.records.dedup.bytes", "By", "Memory the remembered spans take, against dedup_max_bytes.")
	forgotten := counter("otelcol.records.dedup.forgotten", "{span}", "Spans forgotten before dedup_window passed, to stay within dedup_max_bytes: one delivered again would be stored again.")
	if err != nil {
		return nil, err
	}
	exp := attribute.String("exporter", id)
	with := func(kv ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(kv, exp)...))
	}
	causes := []metric.MeasurementOption{
		with(attribute.String("cause", "evicted")),
		with(attribute.String("cause", "too_large")),
		with(attribute.String("cause", "invalid")),
		with(attribute.String("cause", "unwritable")),
	}
	active, parked, plain := with(attribute.String("state", "active")), with(attribute.String("state", "parked")), with()
	ended := with(attribute.String("state", "ended"))
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := im.Stats()
		o.ObserveInt64(accepted, s.Accepted, plain)
		o.ObserveInt64(duplicates, s.Duplicates, plain)
		o.ObserveInt64(rejected, s.Rejected, plain)
		o.ObserveInt64(refused, s.Refused, plain)
		o.ObserveInt64(written, s.Written, plain)
		o.ObserveInt64(spooled, s.Spooled, plain)
		for i, n := range []int64{s.Evicted, s.TooLarge, s.Invalid, s.Unwritable} {
			o.ObserveInt64(dropped, n, causes[i])
		}
		o.ObserveInt64(kept, s.SessionsKept, plain)
		o.ObserveInt64(held, s.HeldBytes, plain)
		o.ObserveInt64(waiting, s.HeldSpans, plain)
		o.ObserveInt64(sessions, int64(s.Sessions), active)
		o.ObserveInt64(sessions, int64(s.Parked), parked)
		o.ObserveInt64(sessions, int64(s.Ended), ended)
		o.ObserveInt64(remembered, s.SeenSpans, plain)
		o.ObserveInt64(rememberedBytes, s.SeenBytes, plain)
		o.ObserveInt64(forgotten, s.ForgottenEarly, plain)
		return nil
	}, accepted, duplicates, rejected, refused, written, spooled, dropped, kept, held, waiting, sessions, remembered, rememberedBytes, forgotten)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
