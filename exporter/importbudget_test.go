package exporter

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// An imported span whose record would be past a reader's decoding budget
// (few bytes, many small items: events of empty arrays) is dropped as too
// large when it is recorded, counted and reported, rather than written
// for every reader of the store to skip; the spans beside it are stored.
func TestImportRecordPastTheBudgetIsTooLarge(t *testing.T) {
	handled := captureHandled(t)
	r := newImportRig(t, ImporterConfig{})
	var empties []attribute.KeyValue
	for c := byte('!'); c < 0x7f; c++ {
		empties = append(empties, attribute.StringSlice(string([]byte{c}), nil))
	}
	costly := span("costly", 2, 1, 1, changed("step")...)
	for range 60 {
		costly.Events = append(costly.Events, sdktrace.Event{Name: "e", Time: costly.Start.Add(time.Millisecond), Attributes: empties})
	}
	r.send(node, span("build", 1, 0, 0, changed("step")...), costly, span("after", 3, 1, 2, changed("step")...))
	if got := names(r.records()); !slices.Equal(got, []string{"build", "after"}) {
		t.Fatalf("stored %v, want build and after", got)
	}
	if st := r.im.Stats(); st.TooLarge != 1 {
		t.Errorf("Stats.TooLarge = %d, want 1", st.TooLarge)
	}
	for e, err := range r.store.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := sessions.DecodeEntry(e); err != nil && !errors.Is(err, sessions.ErrNotRecord) {
			t.Errorf("entry %q does not decode: %v", e.Key, err)
		}
	}
	if len(handled()) == 0 {
		t.Error("nothing reported the dropped record")
	}
}
