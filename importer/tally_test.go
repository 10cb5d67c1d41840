package importer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// The server of the SDK's test (exporter.TestTallyOfAServerKeptByTrace)
// fed as spans to the Importer, kept by trace: 10 requests change, 390
// hit, on 7 keys; the tally counts every hit by key, and the requests let
// go.
func TestImportTallyOfAServerKeptByTrace(t *testing.T) {
	r := newImportRig(t, Config{}, WithKeepBy(KeepByTrace))
	hits := map[string]int64{}
	const requests, changes = 400, 10
	serveRequests(r, 0, requests, changes, hits)
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := r.rows()
	if len(rows) != 1 {
		t.Fatalf("%d sessions, want 1", len(rows))
	}
	checkTally(t, r.store, rows[0].ID, hits, requests-changes)
}

// serveRequests sends requests from..to of the server's workload: request
// i looks up key i%7, and misses (and fills it, a change) when i < changes.
// hits counts the hits by key.
func serveRequests(r *importRig, from, to, changes int, hits map[string]int64) {
	const perBatch = 40
	var batch []Span
	for i := from; i < to; i++ {
		tr := trace.TraceID{byte(i >> 8), byte(i), 7}
		key, miss := fmt.Sprint("k", i%7), i < changes
		result := "hit"
		if miss {
			result = "miss"
		} else {
			hits[key]++
		}
		at := i * 10
		req := span("GET /kernel", 1, 0, at)
		look := span("lookup", 2, 1, at+1, spanbridge.Kind("cache"), spanbridge.Observed(),
			attribute.String("cache.key", key), attribute.String("cache.result", result))
		req.TraceID, look.TraceID = tr, tr
		batch = append(batch, req, look)
		if miss {
			fill := span("fill", 3, 1, at+2, spanbridge.Kind("cache"), spanbridge.Changed(), attribute.String("cache.key", key))
			fill.TraceID = tr
			batch = append(batch, fill)
		}
		if len(batch) >= perBatch || i == to-1 {
			r.send(node, batch...)
			batch = nil
		}
	}
}

// checkTally checks that the tally of session id counts hits by key, and
// requests request marks let go.
func checkTally(t *testing.T, store sessions.Store, id sessions.SessionID, hits map[string]int64, requests int64) {
	t.Helper()
	tl, ok, err := tallies.Read(sessions.NewRecords(store), id)
	if err != nil || !ok {
		t.Fatalf("Tally: %v, %v", ok, err)
	}
	got := map[string][2]int64{}
	var marks int64
	for _, e := range tl.Entries {
		switch {
		case e.Kind == "cache" && e.Name == "lookup":
			v, _ := e.Key.Get("cache.key")
			c := got[v.AsString()]
			c[0] += e.Count
			c[1] += e.Outcomes["hit"]
			got[v.AsString()] = c
		case e.Kind == sessions.MarksKind && e.Name == "GET /kernel":
			marks += e.Count
		}
	}
	var total int64
	for k, n := range hits {
		if got[k][0] != n || got[k][1] != n {
			t.Errorf("%s: tallied %d lookups, %d hits; the server hit it %d times", k, got[k][0], got[k][1], n)
		}
		total += n
	}
	if total != requests || marks != requests {
		t.Errorf("%d hits, %d request marks tallied; want %d of each", total, marks, requests)
	}
}

// An Importer restarted on the same store resumes the sender's session
// and writes a part of its own: the sum counts what both let go.
func TestImportTallyAcrossARestart(t *testing.T) {
	first := newImportRig(t, Config{}, WithKeepBy(KeepByTrace))
	hits := map[string]int64{}
	serveRequests(first, 0, 100, 5, hits)
	if err := first.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	first.clock.Advance(time.Second)
	second := newImportRigOn(t, first.store, first.clock, Config{}, WithKeepBy(KeepByTrace))
	serveRequests(second, 100, 250, 0, hits)
	if err := second.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := second.rows()
	if len(rows) != 1 {
		t.Fatalf("%d sessions, want the one resumed", len(rows))
	}
	parts := 0
	for e, err := range first.store.Scan(keys.TallyPrefix(uint64(rows[0].ID)), keys.Session(uint64(rows[0].ID)+1)) {
		if err != nil {
			t.Fatal(err)
		}
		if keys.IsTally(e.Key) {
			parts++
		}
	}
	if parts != 2 {
		t.Errorf("%d parts, want one a writer", parts)
	}
	checkTally(t, first.store, rows[0].ID, hits, 245)
}
