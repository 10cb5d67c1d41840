package collector

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestConfigStruct(t *testing.T) {
	if err := componenttest.CheckConfigStruct(createDefaultConfig()); err != nil {
		t.Fatal(err)
	}
}

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cm.Sub(component.NewIDWithName(componentType, name).String())
	if err != nil {
		t.Fatal(err)
	}
	cfg := createDefaultConfig().(*Config)
	if err := sub.Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg, confmap.Validate(cfg)
}

func TestLoadConfig(t *testing.T) {
	def, err := loadConfig(t, "")
	if err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	if def.KeepBy != "session" || def.Level != "basic" || def.Marks != "enclosing" || def.SessionTimeout != time.Minute || def.DecisionWait != 30*time.Second || def.QueueConfig.HasValue() ||
		def.MaxHeldBytes != 64<<20 || !def.BackOffConfig.Enabled || def.DedupWindow != 5*time.Minute || def.DedupMaxBytes != 48<<20 {
		t.Errorf("defaults: %+v", def)
	}
	full, err := loadConfig(t, "full")
	if err != nil {
		t.Fatal(err)
	}
	if full.Directory != "/var/lib/otelrecords/ci" || full.KeepBy != "trace" || full.MaxBytes != 1<<30 || full.Level != "full" || full.Marks != "all" ||
		full.SessionTimeout != 5*time.Minute || full.DecisionWait != 10*time.Second || full.TimeoutConfig.Timeout != 30*time.Second ||
		!full.QueueConfig.HasValue() || full.QueueConfig.Get().QueueSize != 100 || full.DedupWindow != 15*time.Minute || full.DedupMaxBytes != 128<<20 {
		t.Errorf("loaded: %+v", full)
	}
	for name, want := range map[string]string{
		"bad_level":          "level",
		"bad_keep_by":        "keep_by",
		"bad_durations":      "session_timeout",
		"bad_max_bytes":      "max_bytes",
		"bad_marks":          "marks",
		"bad_max_held_bytes": "max_held_bytes",
		"bad_dedup":          "dedup_window",
	} {
		_, err := loadConfig(t, name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("records/%s: %v, want an error about %s", name, err, want)
		}
	}
	if _, err := loadConfig(t, "bad_dedup"); err == nil || !strings.Contains(err.Error(), "dedup_max_bytes") {
		t.Errorf("records/bad_dedup: %v, want dedup_max_bytes named too", err)
	}
	_, err = loadConfig(t, "bad_durations")
	if err == nil || !strings.Contains(err.Error(), "decision_wait") {
		t.Errorf("records/bad_durations: %v, want decision_wait named too", err)
	}
}
