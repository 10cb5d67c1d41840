package exporter_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/instruments"
	"github.com/otelrecords/otelrecords/internal/testkit/metrictest"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func TestMetricsMirrorStats(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithMeterProvider(mp), exporter.WithPendingBudget(1))
	p.do("observed", spanbridge.Kind("autotune"))
	p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
	p.do("after", spanbridge.Kind("autotune"))
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, reader, map[string]int64{
		"otelrecords.records.written":                   2, // the observed one went: a budget of 1 byte holds nothing
		"otelrecords.records.dropped{cause=evicted}":    1,
		"otelrecords.sessions.kept":                     1,
		"otelrecords.store.opens":                       1,
		"otelrecords.records.held":                      0,
		"otelrecords.records.dropped{cause=queue_full}": 0,
	})
	p.shutdown(t)
}

func TestMetricsCountTraces(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithMeterProvider(mp),
		exporter.WithKeepBy(exporter.KeepByTrace))
	p.do("hit", spanbridge.Kind("lookup")) // a trace of its own, which changes nothing
	p.do("miss", spanbridge.Kind("compile"), spanbridge.Changed())
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, reader, map[string]int64{"otelrecords.traces.kept": 1, "otelrecords.records.held": 1})
	for deadline := time.Now().Add(exporter.TraceGrace + 5*time.Second); p.exp.Stats().TracesDropped == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	checkMetrics(t, reader, map[string]int64{"otelrecords.traces.unchanged": 1, "otelrecords.traces.evicted": 0, "otelrecords.records.held": 0})
	p.shutdown(t)
}

// checkMetrics collects reader's metrics and fails on each of want that
// differs: a series is named name{key=value} when it has attributes.
func checkMetrics(t *testing.T, reader *sdkmetric.ManualReader, want map[string]int64) {
	t.Helper()
	got, err := metrictest.Series(reader, meterName)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %d, want %d (all: %v)", name, got[name], v, got)
		}
	}
}

// meterName is the meter the SpanProcessor's metrics are under.
const meterName = "github.com/otelrecords/otelrecords/exporter"

// The SpanProcessor registers exactly the SDK's instruments of the one
// table (internal/instruments), under "otelrecords.", each with the
// table's kind, unit and description, every series the table names.
func TestMetricsRegisterTheTable(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	p := newProvider(t, "", exporter.WithStore(sessions.NewMemStore()), exporter.WithMeterProvider(mp))
	defer p.shutdown(t)
	if err := metrictest.CheckInstruments(reader, meterName, instruments.SDK); err != nil {
		t.Error(err)
	}
}
