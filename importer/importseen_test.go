package importer

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestImportLargeTraceTakenOnce sends a trace of 300 spans, more than a
// trace keeps beside its entry (maxTraceSpans): retried whole, then half
// of it again in the reverse order, every span is stored once and
// recognised every other time.
func TestImportLargeTraceTakenOnce(t *testing.T) {
	r := newImportRig(t, Config{})
	const n = 300
	batch := make([]Span, n)
	for i := range batch {
		batch[i] = span("step", 1, 0, i, changed("step")...)
		batch[i].SpanID = trace.SpanID{9, byte(i >> 8), byte(i), 1}
		if i > 0 {
			batch[i].ParentSpanID = batch[0].SpanID
		}
	}
	if res := r.send(node, batch...); res.Duplicates != 0 {
		t.Fatalf("the first send: %+v, want no duplicates", res)
	}
	if res := r.send(node, batch...); res.Duplicates != n {
		t.Fatalf("the retry: %+v, want %d duplicates", res, n)
	}
	half := slices.Clone(batch[n/2:])
	slices.Reverse(half)
	if res := r.send(node, half...); res.Duplicates != len(half) {
		t.Fatalf("half again, reversed: %+v, want %d duplicates", res, len(half))
	}
	if got := len(r.records()); got != n {
		t.Fatalf("%d records stored, want %d", got, n)
	}
	if st := r.im.Stats(); st.SeenSpans != n {
		t.Fatalf("%d spans remembered, want %d", st.SeenSpans, n)
	}
}

// scanFailingStore fails the n-th Scan of one session's records of a
// kind (a range under the kind's prefix that names a session), once: a
// recovery cut short halfway through the sessions it reads back.
type scanFailingStore struct {
	*sessions.MemStore
	prefix []byte
	n      int
}

func (s *scanFailingStore) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	if bytes.HasPrefix(start, s.prefix) && len(start) >= len(s.prefix)+8 {
		if s.n--; s.n == 0 {
			return func(yield func(sessions.Entry, error) bool) {
				yield(sessions.Entry{}, errors.New("a test's read error"))
			}
		}
	}
	return s.MemStore.Scan(start, end)
}

// A recovery that fails after reading back one session, and is tried
// again at the next Import, counts each session's remembered spans once:
// the count the Importer keeps is the sum of its sets.
func TestImportRecoveryTriedAgainCountsOnce(t *testing.T) {
	mem := sessions.NewMemStore()
	fake := clock.NewFake(rigNow)
	r1 := newImportRigOn(t, mem, fake, Config{})
	other := []attribute.KeyValue{attribute.String("service.name", "tester"), attribute.String("service.instance.id", "t-1")}
	r1.send(node, spansOf(7, 20)...)
	r1.send(other, spansOf(8, 30)...)
	fake.Advance(3 * time.Second) // the crash: r1 is left as it is
	store := &scanFailingStore{MemStore: mem, prefix: []byte(keys.Namespace("artifact")), n: 2}
	r2 := newImportRigOn(t, store, fake, Config{})
	if _, err := r2.im.Import(context.Background(), Batch{Resource: node, Spans: spansOf(7, 1)}); err == nil {
		t.Fatal("the first Import recovered through a failing read")
	}
	if res := r2.send(node, spansOf(7, 20)...); res.Duplicates != 20 {
		t.Fatalf("the batch sent again after the recovery: %+v, want all 20 recognised", res)
	}
	if n := r2.im.Stats().SeenSpans; n != 50 {
		t.Fatalf("the seen table holds %d spans, want 50", n)
	}
}
