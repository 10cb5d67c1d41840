package proctest

import (
	"context"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// oneStart is the explicit start every writer of these tests gives its
// first span, as spans imported from another system or a coarse clock do.
const oneStart = "2026-06-01T10:00:00Z"

// sessionCount returns how many session rows the store in dir holds.
func sessionCount(t *testing.T, dir string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := badgerstore.OpenWait(ctx, dir, nil, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	for _, err := range sessions.NewRecords(st).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// Two processes whose first spans carry one explicit start keep two
// sessions, one after the other and side by side: before, the second's
// session took the first's id and wrote over its row and records.
func TestProcessesWithOneStartKeepTheirSessions(t *testing.T) {
	for _, together := range []bool{false, true} {
		dir := t.TempDir()
		labels := []string{"a", "b", "c"}
		var ps []*proc
		for _, l := range labels {
			p := startWriter(t, dir, l, "-n", "150", "-batch", "50", "-start", oneStart)
			if !together {
				p.wait(t, 60*time.Second)
			}
			ps = append(ps, p)
		}
		for _, p := range ps {
			p.wait(t, 60*time.Second)
		}
		work := readWork(t, dir)
		for i, l := range labels {
			if len(work[l]) < 150 {
				t.Logf("together=%v: writer %s said %q; stderr %s", together, l, ps[i].output(), ps[i].stderr.String())
			}
			exactlyOnce(t, "writer "+l, work[l], 150)
		}
		if n := sessionCount(t, dir); n != len(labels) {
			t.Fatalf("together=%v: %d sessions, want %d", together, n, len(labels))
		}
	}
}

// Stores written on two machines with one explicit start, copied into one
// store, keep both sessions whole.
func TestStoresFromTwoMachinesMerge(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for dir, l := range map[string]string{a: "a", b: "b"} {
		startWriter(t, dir, l, "-n", "150", "-start", oneStart).wait(t, 60*time.Second)
	}
	src, err := badgerstore.Open(b, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	var entries []sessions.Entry
	for e, err := range src.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, sessions.Entry{Key: append([]byte(nil), e.Key...), Value: append([]byte(nil), e.Value...)})
	}
	src.Close()
	dst, err := badgerstore.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Write(entries); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	work := readWork(t, a)
	exactlyOnce(t, "machine a", work["a"], 150)
	exactlyOnce(t, "machine b", work["b"], 150)
	if n := sessionCount(t, a); n != 2 {
		t.Fatalf("%d sessions after the merge, want 2", n)
	}
}
