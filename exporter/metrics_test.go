package exporter_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelrecords/otelrecords/exporter"
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
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				got[m.Name] = d.DataPoints[0].Value
			case metricdata.Gauge[int64]:
				got[m.Name] = d.DataPoints[0].Value
			}
		}
	}
	want := map[string]int64{
		"otelrecords.records.written": 2, // the observed one went: a budget of 1 byte holds nothing
		"otelrecords.records.evicted": 1,
		"otelrecords.sessions.kept":   1,
		"otelrecords.store.opens":     1,
		"otelrecords.records.held":    0,
		"otelrecords.records.dropped": 0,
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %d, want %d (all: %v)", name, got[name], v, got)
		}
	}
	p.shutdown(t)
}
