package importer

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// An imported span whose record would be past a reader's decoding budget
// (few bytes, many small items: events of empty arrays) is dropped as too
// large when it is recorded, counted and reported, rather than written
// for every reader of the store to skip; the spans beside it are stored.
func TestImportRecordPastTheBudgetIsTooLarge(t *testing.T) {
	handled := captureHandled(t)
	r := newImportRig(t, Config{})
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

// Spans waiting for their parents count against HeldBytes by what they
// cost: held by the thousand (a sender not kept yet, traces of one span
// and of ten, a 1 KiB attribute each, every string its own allocation as
// pdata's are), the heap they take is at most what the Importer counts.
func TestImportHeldSpansCountTheirCost(t *testing.T) {
	for _, per := range []int{1, 10} {
		t.Run(fmt.Sprint("traces of ", per), func(t *testing.T) {
			r := newImportRig(t, Config{HeldBytes: 1 << 30})
			heap := func() uint64 {
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				return ms.HeapAlloc
			}
			const n = 20000
			h0 := heap()
			for i := 0; i < n; i += 1000 {
				batch := make([]Span, 1000)
				for j := range batch {
					k := i + j
					batch[j] = span(fmt.Sprint("compile ", k), 2, 1, 0,
						attribute.String(strings.Clone("records.kind"), strings.Clone("artifact")),
						attribute.String(strings.Clone("records.effect"), strings.Clone("observed")),
						attribute.String(strings.Clone("blob"), strings.Repeat("x", 1024)))
					batch[j].TraceID = trace.TraceID{byte(k / per >> 8), byte(k / per), 9}
					batch[j].SpanID = trace.SpanID{3, byte(k >> 8), byte(k)}
				}
				r.send(node, batch...)
			}
			used := heap() - h0
			st := r.im.Stats()
			t.Logf("%d spans held: %d bytes of heap, %d counted", st.HeldSpans, used, st.HeldBytes)
			if st.HeldSpans != n || uint64(st.HeldBytes) < used {
				t.Fatalf("%d spans held in %d bytes of heap, counted %d: want all %d, counted at least what they take", st.HeldSpans, used, st.HeldBytes, n)
			}
		})
	}
}
