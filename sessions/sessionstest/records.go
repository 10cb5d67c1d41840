package sessionstest

import (
	"context"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// testRecords drives the retention rules and the Records reader through the
// store: a kept session written by a Recorder reads back in order, typed
// and generic, and a prune removes exactly the old session's records.
func testRecords(t *testing.T, s sessions.Store) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, kinds := range [][]string{{"compile", "autotune"}, {"autotune", "compile"}, {"compile"}} {
		now := base.Add(time.Duration(i) * time.Hour)
		rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, Label: "session"},
			func() (sessions.Store, error) { return nopClose{s}, nil }, func() time.Time { return now })
		for j, kind := range kinds {
			st, _ := rec.Stamp(now.Add(time.Duration(j) * time.Millisecond))
			effect := sessions.Observed
			if j == len(kinds)-1 {
				effect = sessions.Changed
			}
			body := sessions.Record{Name: kind, Wall: time.Millisecond, Attributes: sessions.Attrs{{Key: "n", Value: sessions.Int64Value(int64(i*10 + j))}}}
			if err := rec.Record(kind, effect, st, body); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := sessions.NewRecords(s)
	var ids []sessions.SessionID
	for sess, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	if len(ids) != 3 || !(ids[0] < ids[1] && ids[1] < ids[2]) {
		t.Fatalf("sessions = %v, want 3 oldest first", ids)
	}
	type compile struct {
		N    int    `record:"n"`
		Name string `record:",name"`
	}
	var got []int
	for c, err := range sessions.Typed[compile](r, "compile") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c.Record.N)
	}
	if want := []int{0, 11, 20}; !equal(got, want) {
		t.Fatalf("typed compile records = %v, want %v in stamp order", got, want)
	}
	kinds, err := r.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 2 || kinds[0] != "autotune" || kinds[1] != "compile" {
		t.Fatalf("Kinds = %q, want [autotune compile]", kinds)
	}
	n, err := r.Prune(2)
	if err != nil || n != 1 {
		t.Fatalf("Prune(2) = %d, %v; want 1", n, err)
	}
	got = got[:0]
	for c, err := range r.All("compile") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, int(c.Record.Attributes[0].Value.AsInt64()))
	}
	if want := []int{11, 20}; !equal(got, want) {
		t.Fatalf("after Prune(2), compile records = %v, want %v", got, want)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// nopClose lets several Recorders write through one store in turn without
// closing it.
type nopClose struct{ sessions.Store }

func (nopClose) Close() error { return nil }
