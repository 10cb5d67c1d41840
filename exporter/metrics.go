package exporter

import (
	"context"

	"go.opentelemetry.io/otel/metric"
)

// WithMeterProvider publishes the exporter's counters (Stats) as
// OpenTelemetry metrics named under "otelrecords.", observed when the
// provider's reader collects: nothing is computed on the span path.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// registerMetrics registers one callback observing every counter.
func (e *Exporter) registerMetrics(mp metric.MeterProvider) error {
	m := mp.Meter("github.com/otelrecords/otelrecords/exporter")
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			e.metricErr = err
		}
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			e.metricErr = err
		}
		return g
	}
	written := counter("otelrecords.records.written", "{record}", "Records the store acknowledged.")
	evicted := counter("otelrecords.records.evicted", "{record}", "Held records pushed out by the pending budget.")
	dropped := counter("otelrecords.records.dropped", "{record}", "Ended spans dropped because the queue was full.")
	tooLarge := counter("otelrecords.records.too_large", "{record}", "Records dropped because no store could hold them (over 15 MiB encoded).")
	problems := counter("otelrecords.records.problems", "{record}", "Spans with invalid control attributes (recorded as documented) or that failed to record.")
	writeErrors := counter("otelrecords.store.write_errors", "{error}", "Failed opens or writes of the store (retried).")
	opens := counter("otelrecords.store.opens", "{open}", "Times the store was opened.")
	busyWaits := counter("otelrecords.store.busy_waits", "{wait}", "Writes that found the store held by another process and waited for it (normal operation).")
	spooled := counter("otelrecords.records.spooled", "{record}", "Records set aside in the store's spool because it stayed busy; the next opener writes them.")
	kept := counter("otelrecords.sessions.kept", "{session}", "Sessions kept (1 once this session changed something).")
	trimmedRecords := counter("otelrecords.records.trimmed", "{record}", "Records of this session deleted to keep the store within its byte bound.")
	trimmedSessions := counter("otelrecords.sessions.trimmed", "{session}", "Other sessions deleted to keep the store within its byte bound.")
	tracesSeen := counter("otelrecords.traces.seen", "{trace}", "Traces that had records under KeepByTrace: kept, dropped or evicted, or held still.")
	tracesKept := counter("otelrecords.traces.kept", "{trace}", "Traces kept under KeepByTrace because one of their records changed something.")
	tracesDropped := counter("otelrecords.traces.dropped", "{trace}", "Traces dropped under KeepByTrace: their root ended and the grace passed with nothing changed.")
	tracesEvicted := counter("otelrecords.traces.evicted", "{trace}", "Held traces pushed out by the pending budget before they were decided.")
	storeBytes := gauge("otelrecords.store.bytes", "By", "The store's size as its byte bound counts it (0 without one).")
	held := gauge("otelrecords.records.held", "{record}", "Records held in memory, waiting for a change.")
	heldBytes := gauge("otelrecords.records.held_bytes", "By", "Bytes the held records count against the pending budget.")
	if e.metricErr != nil {
		return e.metricErr
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := e.Stats()
		o.ObserveInt64(written, s.Written)
		o.ObserveInt64(evicted, s.Evicted)
		o.ObserveInt64(dropped, s.Dropped)
		o.ObserveInt64(tooLarge, s.TooLarge)
		o.ObserveInt64(problems, s.Problems)
		o.ObserveInt64(writeErrors, s.WriteErrors)
		o.ObserveInt64(opens, s.StoreOpens)
		o.ObserveInt64(busyWaits, s.BusyWaits)
		o.ObserveInt64(spooled, s.Spooled)
		o.ObserveInt64(kept, s.SessionsKept)
		o.ObserveInt64(held, s.Held)
		o.ObserveInt64(heldBytes, s.HeldBytes)
		o.ObserveInt64(trimmedRecords, s.TrimmedRecords)
		o.ObserveInt64(trimmedSessions, s.TrimmedSessions)
		o.ObserveInt64(storeBytes, s.StoreBytes)
		o.ObserveInt64(tracesSeen, s.TracesSeen)
		o.ObserveInt64(tracesKept, s.TracesKept)
		o.ObserveInt64(tracesDropped, s.TracesDropped)
		o.ObserveInt64(tracesEvicted, s.TracesEvicted)
		return nil
	}, written, evicted, dropped, tooLarge, problems, writeErrors, opens, busyWaits, spooled, kept, held, heldBytes,
		trimmedRecords, trimmedSessions, storeBytes, tracesSeen, tracesKept, tracesDropped, tracesEvicted)
	return err
}
