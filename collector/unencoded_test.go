package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
)

// The records processor without a store of records queues the record of
// a span that goes on as it came without encoding it
// (importer/internal/unencoded): no one reads it while the span goes on.
// When downstream refuses the batch, the records are encoded before
// their requests end, and go on with the next batch, made again from
// the record. Each span goes on once, and reads back as the record it
// reads back as when nothing fails.
func TestProcessorWithoutAStoreFillsWhatFailed(t *testing.T) {
	for _, keepBy := range []string{"session", "trace"} {
		t.Run(keepBy, func(t *testing.T) {
			want, calm := runRefused(t, keepBy, func(int) bool { return false })
			if calm.remade != 0 || calm.asCame == 0 {
				t.Fatalf("nothing refused: %d spans made again, %d as they came; want none made again", calm.remade, calm.asCame)
			}
			// Downstream refuses its 2nd and 3rd batches, and every 7th
			// after: a batch refused again, after its records were filled
			// in, and batches refused amid others taken.
			got, stormy := runRefused(t, keepBy, func(call int) bool { return call == 2 || call == 3 || call%7 == 0 })
			t.Logf("keep_by %s: %d refusals; %d spans went on as they came, %d made again", keepBy, stormy.refused, stormy.asCame, stormy.remade)
			if stormy.refused == 0 || stormy.remade == 0 || stormy.asCame == 0 {
				t.Fatalf("%d refusals, %d spans made again, %d as they came: the test did not refuse records queued unencoded", stormy.refused, stormy.remade, stormy.asCame)
			}
			if len(got) != len(want) {
				t.Errorf("%d spans handed on with refusals, %d without", len(got), len(want))
			}
			for id, w := range want {
				if g, ok := got[id]; !ok {
					t.Errorf("span %x never handed on after refusals", id)
				} else if !bytes.Equal(g, w) {
					t.Errorf("span %x reads back otherwise after refusals", id)
				}
			}
		})
	}
}

// refusedRun is what one run of runRefused saw.
type refusedRun struct {
	refused, asCame, remade int
}

// runRefused sends 30 requests of 20 traces (a root that changed
// something, two children, one of them a mark) to a records processor
// keeping by keepBy without a store of records, in front of a downstream
// that refuses the calls refuse says; a request refused is sent again,
// from its bytes, as a sender does. It returns each span handed on, by
// trace and span id, as the record it reads back as (its stamp left
// out), failing on a span handed on twice.
func runRefused(t *testing.T, keepBy string, refuse func(call int) bool) (map[[24]byte][]byte, refusedRun) {
	t.Helper()
	var run refusedRun
	var calls atomic.Int64
	sink := new(consumertest.TracesSink)
	down, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		if refuse(int(calls.Add(1))) {
			run.refused++
			return errors.New("downstream refuses the batch")
		}
		return sink.ConsumeTraces(ctx, td)
	})
	if err != nil {
		t.Fatal(err)
	}
	p := startWithoutAStore(t, keepBy, down)
	start := time.Now()
	ts := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(start.Add(d)) }
	for r := range 30 {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "refused")
		rs.Resource().Attributes().PutStr("service.instance.id", "refused-"+keepBy)
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("refused")
		for tr := range 20 {
			for i := range 3 {
				s := ss.Spans().AppendEmpty()
				s.SetTraceID(pcommon.TraceID{byte(r), byte(tr), 15: 1})
				s.SetSpanID(pcommon.SpanID{7: byte(i + 1)})
				if i > 0 {
					s.SetParentSpanID(pcommon.SpanID{7: 1})
				}
				s.SetName(fmt.Sprintf("step %d/%d/%d", r, tr, i))
				s.SetKind(ptrace.SpanKindInternal)
				s.SetStartTimestamp(ts(time.Duration(r*1000+tr*10+i) * time.Microsecond))
				s.SetEndTimestamp(ts(time.Duration(r*1000+tr*10+i+5) * time.Microsecond))
				s.SetFlags(0x101)
				if i < 2 {
					s.Attributes().PutStr("records.kind", "step")
					s.Attributes().PutStr("records.effect", map[bool]string{true: "changed", false: "observed"}[i == 0])
				}
				s.Attributes().PutInt("step.n", int64(i))
			}
		}
		sendUntilTaken(t, p, td, 6)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := map[[24]byte][]byte{}
	eachHandedOn(t, sink, func(_ string, sp *importer.Span, flags uint32, _ string, rec sessions.Stamped[sessions.Record]) {
		if flags&0xff != 0 {
			run.asCame++
		} else {
			run.remade++
		}
		rec.Stamp.Session, rec.Stamp.Offset = 0, 0 // another run's session
		v, err := rec.AppendCBOR(nil)
		if err != nil {
			t.Fatal(err)
		}
		var id [24]byte
		copy(id[:16], sp.TraceID[:])
		copy(id[16:], sp.SpanID[:])
		if spans[id] != nil {
			t.Fatalf("span %q handed on twice", sp.Name)
		}
		spans[id] = v
	})
	return spans, run
}

// A span that waits for its parent past its batch, placed by a later
// batch of the same request (two ResourceSpans of one sender), goes on
// as it came too; when downstream refuses that request, its record is
// encoded from the span, which the request still holds: nothing crashes,
// and each span goes on once.
func TestProcessorWithoutAStoreFillsASpanPlacedByALaterBatch(t *testing.T) {
	var calls atomic.Int64
	sink := new(consumertest.TracesSink)
	down, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		if calls.Add(1) == 1 {
			return errors.New("downstream refuses the batch")
		}
		return sink.ConsumeTraces(ctx, td)
	})
	if err != nil {
		t.Fatal(err)
	}
	p := startWithoutAStore(t, "", down)
	start := time.Now()
	ts := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(start.Add(d)) }
	td := ptrace.NewTraces()
	for i := range 2 { // the child first, in its own ResourceSpans; its parent in the next
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "later")
		rs.Resource().Attributes().PutStr("service.instance.id", "later-1")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("later")
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(pcommon.TraceID{1, 15: 1})
		s.SetSpanID(pcommon.SpanID{7: byte(2 - i)})
		if i == 0 {
			s.SetParentSpanID(pcommon.SpanID{7: 1})
		}
		s.SetName(fmt.Sprintf("step %d", i))
		s.SetKind(ptrace.SpanKindInternal)
		s.SetStartTimestamp(ts(time.Duration(10-i) * time.Microsecond))
		s.SetEndTimestamp(ts(time.Duration(20+i) * time.Microsecond))
		s.SetFlags(0x101)
		s.Attributes().PutStr("records.kind", "step")
		s.Attributes().PutStr("records.effect", map[bool]string{true: "changed", false: "observed"}[i == 1])
	}
	sendUntilTaken(t, p, td, 4)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls.Load() < 2 {
		t.Fatalf("downstream called %d times: nothing was refused", calls.Load())
	}
	seen := map[string]int{}
	eachHandedOn(t, sink, func(_ string, sp *importer.Span, _ uint32, _ string, _ sessions.Stamped[sessions.Record]) {
		seen[sp.Name]++
	})
	if seen["step 0"] != 1 || seen["step 1"] != 1 {
		t.Errorf("handed on %v, want each span once", seen)
	}
}

// sendUntilTaken sends td to p until p takes it, at most tries times,
// each time from its bytes, as a sender sends a request again.
func sendUntilTaken(t *testing.T, p consumer.Traces, td ptrace.Traces, tries int) {
	t.Helper()
	body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	for try := 1; ; try++ {
		again, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
		if err != nil {
			t.Fatal(err)
		}
		if err = p.ConsumeTraces(context.Background(), again); err == nil {
			return
		}
		if try == tries {
			t.Fatalf("request refused %d times: %v", tries, err)
		}
	}
}

// startWithoutAStore starts a records processor without a directory,
// keeping by keepBy ("": the default), in front of down.
func startWithoutAStore(t *testing.T, keepBy string, down consumer.Traces) processor.Traces {
	t.Helper()
	cfg := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
	if keepBy != "" {
		cfg.KeepBy = keepBy
	}
	cfg.StateDirectory = t.TempDir()
	p, err := NewProcessorFactory().CreateTraces(context.Background(), processortest.NewNopSettings(componentType), cfg, down)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return p
}
