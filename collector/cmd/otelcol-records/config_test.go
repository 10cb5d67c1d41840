package main

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/otelcol/otelcoltest"

	"github.com/otelrecords/otelrecords/collector"
)

// TestConfigsLoad loads every configuration this distribution is shown
// with — its example and the docs' agent and gateway — and validates
// them with its own factories, so that no documented config is stale.
func TestConfigsLoad(t *testing.T) {
	factories, err := Components()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"config.yaml", "config-persistent.yaml", "../../../docs/collector/agent.yaml", "../../../docs/collector/gateway.yaml"} {
		cfg, err := otelcoltest.LoadConfigAndValidate(path, factories)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		rec, ok := cfg.Exporters[component.MustNewID("records")].(*collector.Config)
		if !ok {
			t.Errorf("%s: no records exporter", path)
			continue
		}
		if rec.Directory == "" {
			t.Errorf("%s: the records exporter names no directory", path)
		}
	}
}

// TestEdgeRoutesBySession checks the docs' first tier, whose
// load-balancing exporter this distribution does not have: it must route
// by service.instance.id, the attribute a session is keyed by, so that
// one session always lands in one gateway's store.
func TestEdgeRoutesBySession(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("..", "..", "..", "docs", "collector", "edge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := cm.Sub("exporters::loadbalancing")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RoutingKey        string   `mapstructure:"routing_key"`
		RoutingAttributes []string `mapstructure:"routing_attributes"`
	}
	if err := lb.Unmarshal(&cfg, confmap.WithIgnoreUnused()); err != nil {
		t.Fatal(err)
	}
	if cfg.RoutingKey != "attributes" || len(cfg.RoutingAttributes) != 1 || cfg.RoutingAttributes[0] != "service.instance.id" {
		t.Fatalf("edge.yaml routes by %q %v, want attributes [service.instance.id]", cfg.RoutingKey, cfg.RoutingAttributes)
	}
}
