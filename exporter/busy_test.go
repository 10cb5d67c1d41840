package exporter_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/keys"
	"github.com/otelrecords/otelrecords/internal/spool"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// holdStore opens the store in dir read-write, as another process would,
// and returns how to let it go.
func holdStore(t *testing.T, dir string) func() {
	t.Helper()
	holder, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var released bool
	release := func() {
		if !released {
			released = true
			holder.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// keptSession records a change, so the session is kept, and then n
// observed records, one span each.
func keptSession(p *provider, n int) {
	_, c := p.span(context.Background(), "compile", spanbridge.Kind("compile"))
	c.SetAttributes(spanbridge.Changed())
	c.End()
	for i := range n {
		p.do("lookup", spanbridge.Kind("autotune"), attribute.Int("i", i))
	}
}

// spooledRecords counts the records (not session rows) the spool of dir
// holds, by merging a copy of it.
func spooledRecords(t *testing.T, dir string) int {
	t.Helper()
	cp := t.TempDir()
	if err := os.CopyFS(spool.Dir(cp), os.DirFS(spool.Dir(dir))); err != nil {
		t.Fatal(err)
	}
	n := 0
	_, err := spool.Merge(cp, func(es []sessions.Entry) error {
		for _, e := range es {
			if !keys.IsSession(e.Key) {
				n++
			}
		}
		return nil
	}, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBusyShutdownSpoolsEverything: a kept session with a large backlog
// shuts down, within 5 s, while another process holds the store: every
// record it accepted is in the spool when Shutdown returns, and a reader
// finds each exactly once after the holder lets go. (Under the race
// detector, which makes mapping a span ten times slower, the backlog is
// 40,000: 5 s cannot map 200,000.)
func TestBusyShutdownSpoolsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("200,000 spans")
	}
	n := 200_000
	if raceEnabled {
		n = 40_000
	}
	dir := filepath.Join(t.TempDir(), "store")
	release := holdStore(t, dir)
	p := newProvider(t, dir, exporter.WithMaxQueueSize(2*n))
	keptSession(p, n)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	err := p.Shutdown(ctx)
	took := time.Since(start)
	st := p.exp.Stats()
	t.Logf("Shutdown took %v: err=%v written=%d spooled=%d dropped=%d pending=%d", took, err, st.Written, st.Spooled, st.Dropped, st.Pending)
	if err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if st.Dropped != 0 || st.Spooled != int64(n)+1 {
		t.Fatalf("spooled %d, dropped %d; want %d spooled", st.Spooled, st.Dropped, n+1)
	}
	if got := spooledRecords(t, dir); got != n+1 {
		t.Fatalf("the spool holds %d records, want %d", got, n+1)
	}
	release()
	// A reader merges the spool (OpenWait does, as the records command).
	r, done := readWaiting(t, dir)
	defer done()
	seen := map[int64]bool{}
	for rec, err := range r.All("autotune") {
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rec.Record.Attributes.Get("i")
		i := v.AsInt64()
		if seen[i] {
			t.Fatalf("record %d twice", i)
		}
		seen[i] = true
	}
	if len(seen) != n {
		t.Fatalf("a reader found %d records, want %d", len(seen), n)
	}
}
