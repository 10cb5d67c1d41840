package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	dep := func(version string, replace *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/mybuild", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "go.opentelemetry.io/otel", Version: "v1.40.0"}, {Path: Path, Version: version, Replace: replace}}}
	}
	for name, c := range map[string]struct {
		bi   *debug.BuildInfo
		want string
	}{
		"the module itself": {&debug.BuildInfo{Main: debug.Module{Path: Path, Version: "(devel)"}}, "(devel)"},
		"a tagged version":  {dep("v0.4.0", nil), "v0.4.0"},
		// issue 33: a user's module on a clone recorded go mod tidy's
		// placeholder.
		"replaced by a clone": {dep("v0.0.0-00010101000000-000000000000", &debug.Module{Path: "/home/me/otelrecords"}), "(devel)"},
		"replaced by a fork":  {dep("v0.4.0", &debug.Module{Path: "example.com/fork", Version: "v0.4.1-fix"}), "v0.4.1-fix"},
		"not a dependency":    {&debug.BuildInfo{Main: debug.Module{Path: "example.com/other"}}, "unknown"},
	} {
		if got := fromBuildInfo(c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}
