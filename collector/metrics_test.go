package collector

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelrecords/otelrecords/instruments"
	"github.com/otelrecords/otelrecords/internal/testkit/metrictest"
)

// ourScope is the meter the component's metrics are under; the
// Collector's helpers (exporterhelper, processorhelper) register theirs
// on the same provider, under their own.
const ourScope = "github.com/otelrecords/otelrecords/collector"

// checkTelemetry fails unless tel holds the Collector's instruments of
// the one table (package instruments), each series with the attribute
// exporter naming the component id, and returns their series.
func checkTelemetry(t *testing.T, tel *componenttest.Telemetry, id string) map[string]int64 {
	t.Helper()
	if err := metrictest.CheckInstruments(tel.Reader, ourScope, instruments.Collector); err != nil {
		t.Error(err)
	}
	if err := metrictest.CheckInstruments(tel.Reader, ourScope, instruments.SDK); err == nil {
		t.Error("the Collector's instruments pass for the SDK's: the check checks nothing")
	}
	series, err := metrictest.Series(tel.Reader, ourScope)
	if err != nil {
		t.Fatal(err)
	}
	for name := range series {
		if !strings.Contains(name, "exporter="+id+",") && !strings.Contains(name, "exporter="+id+"}") {
			t.Errorf("%s: not the attribute exporter=%s", name, id)
		}
	}
	return series
}

// The records exporter registers exactly the Collector's instruments of
// the one table in the Collector's telemetry, and counts into them.
func TestTelemetryExporterRegistersTheTable(t *testing.T) {
	tel := componenttest.NewTelemetry()
	defer tel.Shutdown(context.Background())
	set := exportertest.NewNopSettings(componentType)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Directory = t.TempDir()
	exp, err := f.CreateTraces(context.Background(), set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	if err := exp.ConsumeTraces(ctx, traces(1, false)); err != nil {
		t.Fatal(err)
	}
	series := checkTelemetry(t, tel, set.ID.String())
	if got := series[instruments.PrefixCollector+"spans.accepted{exporter="+set.ID.String()+"}"]; got != 2 {
		t.Errorf("spans.accepted = %d after a batch of 2 (all: %v)", got, series)
	}
}

// So does the records processor.
func TestTelemetryProcessorRegistersTheTable(t *testing.T) {
	tel := componenttest.NewTelemetry()
	defer tel.Shutdown(context.Background())
	set := processortest.NewNopSettings(componentType)
	set.ID = component.NewIDWithName(componentType, "fleet")
	set.TelemetrySettings = tel.NewTelemetrySettings()
	f := NewProcessorFactory()
	cfg := f.CreateDefaultConfig().(*ProcessorConfig)
	cfg.StateDirectory = t.TempDir()
	p, err := f.CreateTraces(context.Background(), set, cfg, new(consumertest.TracesSink))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	checkTelemetry(t, tel, "records/fleet")
}
