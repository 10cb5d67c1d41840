package exporter_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// TestHostileHugeLabelAndResource: a label and a Resource attribute of 17
// MiB, more than Badger stores in one value, would make the session row
// unwritable, and with it every record of the session. They are cut to 64
// KiB, the row says so (records.session.truncated), and every record is
// written.
func TestHostileHugeLabelAndResource(t *testing.T) {
	huge := strings.Repeat("x", 17<<20)
	dir := filepath.Join(t.TempDir(), "store")
	p := hostileProvider(t, dir, []sdktrace.TracerProviderOption{
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "hostile"), attribute.String("huge", huge))),
	}, exporter.WithLabel(huge))
	_, c := p.span(context.Background(), "compile", spanbridge.Kind("compile"))
	c.SetAttributes(spanbridge.Changed())
	c.End()
	p.do("after", spanbridge.Kind("compile"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.exp.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
	p.shutdown(t)

	r, done := readAll(t, dir)
	defer done()
	ss := countSessions(t, r)
	if len(ss) != 1 {
		t.Fatalf("%d sessions, want 1", len(ss))
	}
	if n := len(ss[0].Label); n != 64<<10 {
		t.Errorf("label of %d bytes, want 64 KiB", n)
	}
	if v, _ := ss[0].Resource.Get("huge"); len(v.AsString()) != 64<<10 {
		t.Errorf("resource attribute of %d bytes, want 64 KiB", len(v.AsString()))
	}
	if v, ok := ss[0].Resource.Get("records.session.truncated"); !ok || !v.AsBool() {
		t.Error("the row does not say it was cut")
	}
	if got := names(t, r, "compile"); len(got) != 2 {
		t.Errorf("records = %q, want both", got)
	}
}
