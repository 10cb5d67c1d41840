package collector

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// A real Jaeger (v1.76, memory storage) keeps the spans of a tally as
// they were sent: a store's tally, replayed to it over OTLP, comes back
// from its api_v3 by `records pull` byte for byte with the records;
// the part Jaeger holds two versions of comes back as the newer, though
// the older came last.
func TestTallyThroughJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Jaeger")
	}
	query, otlp := startJaeger(t)
	id := sessions.SessionID(time.Now().Add(-time.Minute).UnixNano())
	p1, p2 := handMadeTally(id, 1, 390), handMadeTally(id, 1<<63+7, 5)
	orig := sessions.NewMemStore()
	if err := orig.Write(tallyEntries(t, id, p1, p2)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(otlp), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(ctx)
	rp, err := replay.Replay(ctx, sessions.NewRecords(orig), exp, replay.Options{})
	if err != nil || rp.Tallies != 2 {
		t.Fatalf("replay: %+v, %v; want 2 tallies", rp, err)
	}
	row, _, _ := sessions.NewRecords(orig).Session(id)
	older, err := spanbridge.TallySpan(spanbridge.Resource(row), handMadeTally(id, 1, 300))
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, []sdktrace.ReadOnlySpan{older}); err != nil {
		t.Fatal(err)
	}

	j, err := pull.NewJaeger(query, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pulled *sessions.MemStore
	var p pull.Progress
	for range 50 {
		pulled = sessions.NewMemStore()
		if p, err = pull.Pull(ctx, j, sessions.NewRecords(pulled), pull.Options{}); err != nil {
			t.Fatal(err)
		}
		if p.Tallies == 2 && p.Records == 1 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("pull: %+v", p)
	want, got := storeEntries(t, orig), storeEntries(t, pulled)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("key %q: pulled %x\nwant %x", k, got[k], want[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("pulled %d entries, want %d", len(got), len(want))
	}
}

// storeEntries returns every entry of st, by key.
func storeEntries(t *testing.T, st sessions.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for e, err := range st.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[string(e.Key)] = string(e.Value)
	}
	return out
}
