package exporter_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// panicky is an ended span whose links panic when asked for, as a
// hostile or broken ReadOnlySpan might.
type panicky struct{ sdktrace.ReadOnlySpan }

func (panicky) Links() []sdktrace.Link { panic("links exploded") }

// handOver is a span processor that hands the exporter every span, and
// the span named "hostile" wrapped in panicky when it ends.
type handOver struct{ *exporter.Exporter }

func (h handOver) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Name() == "hostile" {
		s = panicky{s}
	}
	h.Exporter.OnEnd(s)
}

// TestPanickingSpanIsDroppedAndReported: a span whose mapping panics is
// dropped, counted and reported through otel.Handle, never raised into the
// program, and the records around it are all stored, in order.
func TestPanickingSpanIsDroppedAndReported(t *testing.T) {
	errs := captureErrors(t)
	dir := filepath.Join(t.TempDir(), "store")
	exp, err := exporter.New(dir, exporter.WithLevel(sessions.LevelBasic))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(handOver{exp}))
	tr := tp.Tracer("test")
	ctx := context.Background()
	var want []string
	for i := range 300 {
		if i == 150 {
			_, s := tr.Start(ctx, "hostile", spanbridge.Record("compile")...)
			s.End()
		}
		n := "step-" + strconv.Itoa(i)
		_, s := tr.Start(ctx, n, spanbridge.Record("compile")...)
		if i == 0 {
			s.SetAttributes(spanbridge.Changed())
		}
		s.End()
		want = append(want, n)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := exp.Stats(); st.Problems != 1 {
		t.Errorf("Problems = %d, want 1 (the hostile span)", st.Problems)
	}
	reported := false
	for _, e := range errs.All() {
		reported = reported || strings.Contains(e.Error(), `recording span "hostile" failed: links exploded`)
	}
	if !reported {
		t.Errorf("the panic was not reported through otel.Handle: %v", errs.All())
	}
	r, done := readAll(t, dir)
	defer done()
	if got := names(t, r, "compile"); !slices.Equal(got, want) {
		t.Errorf("stored %d records, want the %d others in order:\n got %q\nwant %q", len(got), len(want), got, want)
	}
}
