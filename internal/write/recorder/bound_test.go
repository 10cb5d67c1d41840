package recorder_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// A record written late with the session's lowest seq (a mark open since
// the session began) survives the flush that writes it, and then goes with
// the oldest records: the bound deletes by seq, as readers order records.
func TestMaxBytesSparesWhatItJustWrote(t *testing.T) {
	mem := sessions.NewMemStore()
	var reports []string
	rec := recorder.New(recorder.Config{Level: sessions.LevelBasic, MaxBytes: 8 << 10,
		Report: func(class string, err error) { reports = append(reports, class) }},
		func() (sessions.Store, error) { return mem, nil }, func() time.Time { return t0 })
	pad := sessions.Attrs{{Key: "pad", Value: sessions.StringValue(strings.Repeat("x", 1000))}}
	put := func(name string, st sessions.Stamp, e sessions.Effect) {
		t.Helper()
		if err := rec.Record("compile", e, st, sessions.Record{Name: name, Attributes: pad}); err != nil {
			t.Fatal(err)
		}
		if err := rec.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	serve, _ := rec.Stamp(t0)
	for i := range 40 {
		st, _ := rec.Stamp(t0.Add(time.Duration(i+1) * time.Millisecond))
		put(fmt.Sprint("r", i), st, sessions.Changed)
	}
	put("serve", serve, sessions.Observed)
	if got := names(t, mem, "compile"); !slices.Contains(got, "serve") || slices.Contains(got, "r0") || !slices.Contains(got, "r39") {
		t.Fatalf("after the late record, compile = %q: want it kept, with the newest and not the oldest", got)
	}
	for i := 40; i < 50; i++ {
		st, _ := rec.Stamp(t0.Add(time.Duration(i+1) * time.Millisecond))
		put(fmt.Sprint("r", i), st, sessions.Changed)
	}
	if got := names(t, mem, "compile"); slices.Contains(got, "serve") || !slices.Contains(got, "r49") {
		t.Fatalf("compile = %q: want the late record gone with the oldest", got)
	}
	if ids := sessionIDs(t, mem); len(ids) != 1 {
		t.Fatalf("session rows = %v: the bound must never delete the running session's row", ids)
	}
	s := rec.Stats()
	if left := len(names(t, mem, "compile")); s.TrimmedRecords != int64(51-left) || s.StoreBytes > 9<<10 {
		t.Fatalf("stats = %+v with %d records left", s, left)
	}
	if !slices.Equal(slices.Compact(reports), []string{"max bytes"}) {
		t.Fatalf("reports = %q", reports)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
