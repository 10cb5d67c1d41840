package spanbridge_test

import (
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func TestAtLevel(t *testing.T) {
	source := spanbridge.Full(attribute.String("source", "kernel void f() {}"))
	kvs := []attribute.KeyValue{attribute.String("kernel", "f"), source, spanbridge.Kind("compile")}
	orig := slices.Clone(kvs)

	if got := spanbridge.AtLevel(kvs, sessions.LevelFull); &got[0] != &kvs[0] || len(got) != len(kvs) {
		t.Errorf("at level full: %v, want kvs itself", got)
	}
	got := spanbridge.AtLevel(kvs, sessions.LevelBasic)
	if want := []attribute.KeyValue{kvs[0], kvs[2]}; !slices.Equal(got, want) {
		t.Errorf("at level basic: %v, want %v", got, want)
	}
	if !slices.Equal(kvs, orig) {
		t.Errorf("AtLevel modified its input: %v", kvs)
	}
	light := []attribute.KeyValue{attribute.String("kernel", "f")}
	if got := spanbridge.AtLevel(light, sessions.LevelBasic); &got[0] != &light[0] {
		t.Error("at level basic, attributes without a heavy one were copied")
	}
	if got := spanbridge.AtLevel(nil, sessions.LevelBasic); got != nil {
		t.Errorf("AtLevel(nil) = %v", got)
	}
}
