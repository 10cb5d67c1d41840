package main

import (
	"context"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/otelcol"

	"github.com/otelrecords/otelrecords/collector"
)

// TestConfigsLoad loads every configuration this distribution is shown
// with — its examples, the docs' agent and gateways, and the YAML blocks
// of the documents (docs/COLLECTOR.md; a fragment within a pipeline) —
// and validates them with its own factories, so that no documented
// config is stale. A records exporter in a configuration file names its
// directory.
func TestConfigsLoad(t *testing.T) {
	factories, err := Components()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range shippedConfigs(t) {
		files, _ := c.files(t, t.TempDir(), "backend.example:4317")
		cfg, err := load(files, factories)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		rec, ok := cfg.Exporters[component.MustNewID("records")].(*collector.Config)
		if ok && c.file && rec.Directory == "" {
			t.Errorf("%s: the records exporter names no directory", c.name)
		}
		if _, proc := cfg.Processors[component.MustNewID("records")]; c.file && !ok && !proc {
			t.Errorf("%s: neither a records exporter nor a records processor", c.name)
		}
	}
}

// load resolves the configuration files as otelcol-records does, and
// validates the configuration.
func load(files []string, factories otelcol.Factories) (*otelcol.Config, error) {
	set := settings().ConfigProviderSettings
	for _, f := range files {
		set.ResolverSettings.URIs = append(set.ResolverSettings.URIs, "file:"+f)
	}
	cp, err := otelcol.NewConfigProvider(set)
	if err != nil {
		return nil, err
	}
	cfg, err := cp.Get(context.Background(), factories)
	if err != nil {
		return nil, err
	}
	return cfg, cfg.Validate()
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
