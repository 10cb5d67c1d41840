package importer

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The server of the SDK's test (exporter.TestTallyOfAServerKeptByTrace)
// fed as spans to the Importer, kept by trace: 10 requests change, 390
// hit, on 7 keys; the tally counts every hit by key, and the requests let
// go.
func TestImportTallyOfAServerKeptByTrace(t *testing.T) {
	r := newImportRig(t, Config{}, WithKeepBy(KeepByTrace))
	hits := map[string]int64{}
	const requests, changes, perBatch = 400, 10, 40
	var batch []Span
	for i := range requests {
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
		if len(batch) >= perBatch || i == requests-1 {
			r.send(node, batch...)
			batch = nil
		}
	}
	if err := r.im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := r.rows()
	if len(rows) != 1 {
		t.Fatalf("%d sessions, want 1", len(rows))
	}
	tl, ok, err := sessions.NewRecords(r.store).Tally(rows[0].ID)
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
	if total != requests-changes || marks != requests-changes {
		t.Errorf("%d hits, %d request marks tallied; want %d of each", total, marks, requests-changes)
	}
}
