// Package metrictest reads what a component registered on an SDK meter
// (a ManualReader) and checks it against the one table of instruments,
// kept apart from testsupport so that the tests that do not read metrics
// (and the modules they build) do not need the metric SDK.
package metrictest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/otelrecords/otelrecords/instruments"
)

// collect collects reader's metrics of the meter named scope, by name.
func collect(reader sdkmetric.Reader, scope string) (map[string]metricdata.Metrics, error) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		return nil, err
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			continue
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("no metrics under the meter %q", scope)
	}
	return got, nil
}

// Series collects reader's int64 series of the meter named scope, each
// named name, or name{key=value,...} (its attributes, sorted) when it has
// attributes: what a test of a component's metrics reads.
func Series(reader sdkmetric.Reader, scope string) (map[string]int64, error) {
	got, err := collect(reader, scope)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for name, m := range got {
		var points []metricdata.DataPoint[int64]
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			points = d.DataPoints
		case metricdata.Gauge[int64]:
			points = d.DataPoints
		}
		for _, p := range points {
			var kv []string
			for _, a := range p.Attributes.ToSlice() {
				kv = append(kv, string(a.Key)+"="+a.Value.Emit())
			}
			key := name
			if len(kv) > 0 {
				key += "{" + strings.Join(kv, ",") + "}"
			}
			out[key] = p.Value
		}
	}
	return out, nil
}

// CheckInstruments says how the metrics reader collects under the meter
// named scope (a component's) differ from w's instruments of the one
// table: each must be there under w's prefix with the table's kind (a
// monotonic sum or a gauge), unit and description, and one series per
// point the table names (its attribute among the series' attributes); and
// no other instrument may be. It returns nil when they are the same.
func CheckInstruments(reader sdkmetric.Reader, scope string, w instruments.Where) error {
	got, err := collect(reader, scope)
	if err != nil {
		return err
	}
	var errs []error
	prefix := instruments.Prefix(w)
	for _, in := range instruments.Of(w) {
		name := prefix + in.Name
		m, ok := got[name]
		delete(got, name)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: not registered", name))
			continue
		}
		if m.Unit != in.Unit || m.Description != in.Description {
			errs = append(errs, fmt.Errorf("%s: unit %q, description %q; the table says %q, %q", name, m.Unit, m.Description, in.Unit, in.Description))
		}
		var series []metricdata.DataPoint[int64]
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			if in.Kind != instruments.Counter || !d.IsMonotonic {
				errs = append(errs, fmt.Errorf("%s: a sum (monotonic %v); the table says kind %d", name, d.IsMonotonic, in.Kind))
			}
			series = d.DataPoints
		case metricdata.Gauge[int64]:
			if in.Kind != instruments.Gauge {
				errs = append(errs, fmt.Errorf("%s: a gauge; the table says kind %d", name, in.Kind))
			}
			series = d.DataPoints
		default:
			errs = append(errs, fmt.Errorf("%s: a %T", name, m.Data))
			continue
		}
		var seen, want []string
		for _, p := range series {
			v := ""
			if in.Points[0].Key != "" {
				a, _ := p.Attributes.Value(attribute.Key(in.Points[0].Key))
				v = a.Emit()
			}
			seen = append(seen, v)
		}
		for _, p := range in.Points {
			want = append(want, p.Value)
		}
		slices.Sort(seen)
		slices.Sort(want)
		if !slices.Equal(seen, want) {
			errs = append(errs, fmt.Errorf("%s: series %q; the table names %q", name, seen, want))
		}
	}
	if len(got) > 0 {
		errs = append(errs, fmt.Errorf("registered outside the table: %s", strings.Join(slices.Sorted(maps.Keys(got)), ", ")))
	}
	return errors.Join(errs...)
}
