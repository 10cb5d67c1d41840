package importer_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/instruments"
	"github.com/otelrecords/otelrecords/internal/testkit/metrictest"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
)

// unpublished are the Stats fields no instrument reads, each with why.
var unpublished = map[string]string{
	"Pending":           "records batched for the next write, written within the flush interval: records.written counts them next",
	"FirstSpoolWait":    "a duration, not a count: how long the first spooling write waited, for the log and tests",
	"SpooledUnwritable": "a part of records.spooled (those the store's failures sent there); store.write_errors says the store failed",
	"Queued":            "the SpanProcessor's queue depth at an instant, bounded by the queue; its overflow is records.dropped{cause=queue_full}",
	"AttributesDropped": "attributes the sender's SDK dropped before the span reached us, not a loss of ours: each record says how many went, and records.problems counts spans that may have lost records.effect so",
	"HeldSpanBytes":     "a part of held.bytes, which in the Collector counts the waiting spans' bytes",
	"Late":              "how the Importer's sessions went (a span after its parent was recorded), not what became of a span: for tests and diagnosis",
	"Resumed":           "how the Importer's sessions went (a sender back after a quiet), not what became of a span: for tests and diagnosis",
	"Recovered":         "how the Importer's sessions went (sessions read back at start), not what became of a span: for tests and diagnosis",
}

// readers returns, for each Stats field an instrument reads, the
// components that publish it.
func readers() map[string]instruments.Where {
	out := map[string]instruments.Where{}
	for _, in := range instruments.Of(instruments.Both) {
		for _, p := range in.Points {
			out[p.Field] |= in.Where
		}
	}
	return out
}

// Every field of Stats has an instrument, or a reason it has none in
// unpublished: a counter added to the one Stats is published by both
// components (the SpanProcessor's fields, which an Importer's Stats
// embeds) or by the Collector's (an Importer's own), never silently by
// neither.
func TestMetricsCoverEveryStatsField(t *testing.T) {
	read := readers()
	check := func(f reflect.StructField, want instruments.Where) {
		why, exempt := unpublished[f.Name]
		switch {
		case exempt && read[f.Name] != 0:
			t.Errorf("Stats.%s is published, yet listed as unpublished (%s)", f.Name, why)
		case exempt:
		case read[f.Name]&want != want:
			t.Errorf("Stats.%s: no instrument of %v reads it (published by %v); add one to package instruments or a reason to unpublished", f.Name, want, read[f.Name])
		}
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[recorder.Stats]()) {
		check(f, instruments.Both)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[importer.Stats]()) {
		if len(f.Index) == 1 && !f.Anonymous {
			check(f, instruments.Collector)
		}
	}
	for name := range unpublished {
		if _, ok := reflect.TypeFor[importer.Stats]().FieldByName(name); !ok {
			t.Errorf("unpublished lists %s, which Stats has not", name)
		}
	}
}

// records.dropped is one thing in both components: the same Stats give
// the same series, cause by cause, under either prefix.
func TestMetricsDroppedIsOneThing(t *testing.T) {
	s := recorder.Stats{Dropped: 1, Evicted: 2, TooLarge: 3, Invalid: 4, Unwritable: 5, TracesDropped: 100}
	collect := func(w instruments.Where, reg func(m *sdkmetric.MeterProvider) error) map[string]int64 {
		reader := sdkmetric.NewManualReader()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		defer mp.Shutdown(context.Background())
		if err := reg(mp); err != nil {
			t.Fatal(err)
		}
		series, err := metrictest.Series(reader, "t")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for name, v := range series {
			if cause, ok := strings.CutPrefix(name, instruments.Prefix(w)+instruments.DroppedName+"{cause="); ok {
				out[strings.TrimSuffix(cause, "}")] = v
			}
		}
		return out
	}
	sdk := collect(instruments.SDK, func(mp *sdkmetric.MeterProvider) error {
		_, err := instruments.Register(mp.Meter("t"), instruments.SDK, func() recorder.Stats { return s })
		return err
	})
	col := collect(instruments.Collector, func(mp *sdkmetric.MeterProvider) error {
		_, err := instruments.Register(mp.Meter("t"), instruments.Collector, func() importer.Stats { return importer.Stats{Stats: s} })
		return err
	})
	want := map[string]int64{"queue_full": 1, "evicted": 2, "too_large": 3, "invalid": 4, "unwritable": 5}
	if !reflect.DeepEqual(sdk, want) || !reflect.DeepEqual(col, want) {
		t.Errorf("records.dropped by cause: SDK %v, Collector %v, want both %v (TracesDropped, the policy's choice, not among them)", sdk, col, want)
	}
}
