package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// writeBuildStore runs a pretend build twice into the store at dir, through
// exporter.New on the real clock, so that its session ids are as a
// program's are: their low bits random, beyond what a double holds. Each
// run plans (a mark), tunes matmul (an error: simd failed) and compiles
// softmax_f16 for two seconds. It returns the store's session ids, as
// the store holds them.
func writeBuildStore(t *testing.T, dir string) []string {
	t.Helper()
	for range 2 {
		exp, err := exporter.New(dir, exporter.WithLabel("models build"))
		if err != nil {
			t.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "builder"))))
		tracer := tp.Tracer("example.com/build")
		start := time.Now()
		ctx, plan := tracer.Start(context.Background(), "plan", append(spanbridge.Mark(), trace.WithTimestamp(start))...)
		_, tune := tracer.Start(ctx, "tune matmul", append(spanbridge.Record("autotune", attribute.String("autotune.key", "matmul"), spanbridge.Changed()),
			trace.WithTimestamp(start))...)
		tune.SetStatus(codes.Error, "simd failed")
		tune.End(trace.WithTimestamp(start.Add(time.Millisecond)))
		_, compile := tracer.Start(ctx, "compile softmax", append(spanbridge.Record("compile", attribute.String("kernel", "softmax_f16"), spanbridge.Changed()),
			trace.WithTimestamp(start.Add(time.Millisecond)))...)
		compile.End(trace.WithTimestamp(start.Add(2001 * time.Millisecond)))
		plan.End(trace.WithTimestamp(start.Add(2002 * time.Millisecond)))
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return serverSessions(t, dir)
}

// TestJSONSessionIDsAreStrings: every --json output prints session ids as
// strings, exactly, and every command that takes an id takes one as
// printed, quotes and all (issue 43: ids beyond 2^53 were JSON numbers,
// which jq 1.6 rounds).
func TestJSONSessionIDsAreStrings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "builds")
	ids := writeBuildStore(t, dir)
	if len(ids) != 2 {
		t.Fatalf("sessions %v, want 2", ids)
	}
	for _, args := range [][]string{
		{"sessions"}, {"dump"}, {"show", "compile"}, {"timeline"}, {"summary"},
		{"why", "compile", "kernel=softmax_f16"}, {"prune", "--keep", "1", "--dry-run"},
	} {
		out := mustRun(t, append(args, "--dir", dir, "--json")...)
		n := 0
		for line := range strings.Lines(out) {
			dec := json.NewDecoder(strings.NewReader(line))
			dec.UseNumber()
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				t.Fatalf("records %v --json: %q: %v", args, line, err)
			}
			prev, _ := obj["previous"].(map[string]any)
			for _, v := range []any{obj["id"], obj["session"], prev["session"]} {
				if v == nil {
					continue
				}
				n++
				if s, ok := v.(string); !ok || !slices.Contains(ids, s) {
					t.Errorf("records %v --json: a session id %#v (%T), want one of %q as a string", args, v, v, ids)
				}
			}
		}
		if n == 0 {
			t.Errorf("records %v --json printed no session id:\n%s", args, out)
		}
	}
	// Taken back as printed: in JSON (with its quotes), or by jq -r.
	for _, id := range []string{ids[1], `"` + ids[1] + `"`} {
		if out := mustRun(t, "timeline", "--dir", dir, "--session", id); !strings.Contains(out, "session "+ids[1]) {
			t.Errorf("timeline --session %s:\n%s", id, out)
		}
	}
}
