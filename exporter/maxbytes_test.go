package exporter_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// storeBytes is a store's size as WithMaxBytes counts it: key + value of
// every entry under records/v1.
func storeBytes(t *testing.T, st sessions.Store) (n int64) {
	t.Helper()
	for e, err := range st.Scan([]byte("records/v1/"), []byte("records/v10")) {
		if err != nil {
			t.Fatal(err)
		}
		n += int64(len(e.Key) + len(e.Value))
	}
	return n
}

var pad = attribute.String("pad", strings.Repeat("x", 1000))

// writeSession keeps a session of n changed records, each about 1 KB,
// named after the session.
func writeSession(t *testing.T, store sessions.Store, name string, n int) {
	t.Helper()
	p := newProvider(t, "", exporter.WithStore(store), exporter.WithLabel(name))
	for i := range n {
		p.do(fmt.Sprint(name, " ", i), spanbridge.Kind("compile"), spanbridge.Changed(), pad)
	}
	p.shutdown(t)
}

func labels(t *testing.T, st sessions.Store) []string {
	t.Helper()
	var out []string
	for _, s := range countSessions(t, sessions.NewRecords(st)) {
		out = append(out, s.Label)
	}
	return out
}

// Past the bound, the oldest other sessions go first, one at a time as
// the running session needs their room; then the running session's own
// oldest records, never its row; a session newer than the running one is
// left alone. What went is counted and reported once.
func TestMaxBytesPrunesOldestSessionsThenOwnOldestRecords(t *testing.T) {
	mem := sessions.NewMemStore()
	shared := nopClose{mem}
	for _, name := range []string{"old 1", "old 2", "old 3"} {
		writeSession(t, shared, name, 10)
	}
	per := storeBytes(t, mem) / 3
	limit := 4 * per
	errs := captureErrors(t)

	p := newProvider(t, "", exporter.WithStore(shared), exporter.WithLabel("endless"), exporter.WithMaxBytes(limit))
	step := func(i int) {
		p.do(fmt.Sprint("endless ", i), spanbridge.Kind("compile"), spanbridge.Changed(), pad)
		if err := p.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	step(0)
	// A session of another process, newer than the running one.
	writeSession(t, shared, "newer", 5)
	for i := 1; i <= 8; i++ {
		step(i)
	}
	// 4 sessions' worth of bytes with a bound of 4: nothing went yet.
	if got := labels(t, mem); !slices.Equal(got, []string{"old 1", "old 2", "old 3", "endless", "newer"}) {
		t.Fatalf("sessions = %q before the bound was reached", got)
	}
	for i := 9; i <= 12; i++ {
		step(i)
	}
	// Past it, the oldest went, alone.
	if got := labels(t, mem); !slices.Equal(got, []string{"old 2", "old 3", "endless", "newer"}) {
		t.Fatalf("sessions = %q, want the oldest pruned first, alone", got)
	}
	for i := 13; i < 60; i++ {
		step(i)
	}
	p.shutdown(t)

	if got := labels(t, mem); !slices.Equal(got, []string{"endless", "newer"}) {
		t.Fatalf("sessions = %q, want every older session pruned, the newer one left", got)
	}
	own := names(t, sessions.NewRecords(mem), "compile")
	if !slices.Contains(own, "endless 59") || slices.Contains(own, "endless 0") || len(names(t, sessions.NewRecords(mem), "compile")) < 10 {
		t.Fatalf("compile = %q, want the running session's newest records and not its oldest", own)
	}
	for _, name := range own {
		if strings.HasPrefix(name, "old") {
			t.Fatalf("compile = %q: an older session's records are left", own)
		}
	}
	st := p.exp.Stats()
	if st.TrimmedSessions != 3 || st.TrimmedRecords == 0 || int(st.TrimmedRecords)+len(own)-5 != 60 {
		t.Fatalf("stats = %+v, want 3 sessions and the running session's missing records counted", st)
	}
	if got := storeBytes(t, mem); got > limit+limit/16+2*per/10 || st.StoreBytes != got {
		t.Fatalf("store holds %d bytes (Stats says %d), bound %d", got, st.StoreBytes, limit)
	}
	var reports []string
	for _, err := range errs.All() {
		if strings.Contains(err.Error(), "bound") {
			reports = append(reports, err.Error())
		}
	}
	if len(reports) != 1 {
		t.Fatalf("reports = %q, want one", reports)
	}
}

// The same on Badger: the bound holds for the store in a directory.
func TestMaxBytesOnBadger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	for i := range 3 {
		p := newProvider(t, dir, exporter.WithLabel(fmt.Sprint("old ", i)))
		for j := range 20 {
			p.do(fmt.Sprint("old ", i, " ", j), spanbridge.Kind("compile"), spanbridge.Changed(), pad)
		}
		p.shutdown(t)
	}
	const limit = 30 << 10
	p := newProvider(t, dir, exporter.WithLabel("endless"), exporter.WithMaxBytes(limit))
	for i := range 200 {
		p.do(fmt.Sprint("endless ", i), spanbridge.Kind("compile"), spanbridge.Changed(), pad)
		if i%10 == 9 {
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	p.shutdown(t)
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := labels(t, st); !slices.Equal(got, []string{"endless"}) {
		t.Fatalf("sessions = %q, want the running one alone", got)
	}
	// One flush writes 10 records, ~11 KB, all in the newest chunk.
	if got := storeBytes(t, st); got > limit+12<<10 {
		t.Fatalf("store holds %d bytes, bound %d", got, limit)
	}
	if s := p.exp.Stats(); s.TrimmedSessions != 3 || s.TrimmedRecords == 0 {
		t.Fatalf("stats = %+v", s)
	}
	if own := names(t, sessions.NewRecords(st), "compile"); !slices.Contains(own, "endless 199") {
		t.Fatalf("the newest record went: %q", own)
	}
}

// A value of OTELRECORDS_MAX_BYTES below 1 would delete everything: it is
// reported and ignored, as one that does not parse.
func TestMaxBytesFromEnvironment(t *testing.T) {
	// A bare 64 is 64MiB with its unit left off: taken as 64 bytes it
	// trimmed every other session away.
	for _, v := range []string{"0", "-1", "64", "1MB", "100KiB", "64 MiBs", "lots"} {
		t.Run(v, func(t *testing.T) {
			mem := sessions.NewMemStore()
			writeSession(t, nopClose{mem}, "old", 3)
			e := captureErrors(t)
			t.Setenv(exporter.EnvMaxBytes, v)
			writeSession(t, nopClose{mem}, "new", 3)
			if got := labels(t, mem); len(got) != 2 {
				t.Fatalf("sessions = %q, want both", got)
			}
			if len(e.All()) != 1 || !strings.Contains(e.All()[0].Error(), exporter.EnvMaxBytes) || !strings.Contains(e.All()[0].Error(), "ignored") {
				t.Fatalf("reports = %v, want one naming %s", e.All(), exporter.EnvMaxBytes)
			}
		})
	}
	mem := sessions.NewMemStore()
	writeSession(t, nopClose{mem}, "old", 1100) // about 1.1 MB
	t.Setenv(exporter.EnvMaxBytes, "1mib")
	writeSession(t, nopClose{mem}, "new", 3)
	if got := labels(t, mem); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("with %s=1mib, sessions = %q, want the new one alone", exporter.EnvMaxBytes, got)
	}
}
