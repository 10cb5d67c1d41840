package collector

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The processor hands on the spans it was given where it can (issue 48):
// the proof that this changes nothing downstream is that every span it
// hands on, as it came or made again from its record, is read back by
// `records pull`'s mapping (spanbridge.FromResource, spanbridge.FromSpan,
// encoded as sessions.Records.Put encodes) into exactly the bytes the
// processor stored under that session and seq — over the four-path
// test's cacheserver traffic and over spans built to be awkward.

// pulledView shows a span handed on, converted as the processor converts
// a request (batches), as a spanbridge.Source: what `records pull` reads
// of it.
type pulledView struct{ s *importer.Span }

func (v pulledView) Name() string { return v.s.Name }
func (v pulledView) SpanContext() trace.SpanContext {
	ts, _ := trace.ParseTraceState(v.s.TraceState)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: v.s.TraceID, SpanID: v.s.SpanID, TraceState: ts, TraceFlags: trace.FlagsSampled})
}
func (v pulledView) Parent() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: v.s.TraceID, SpanID: v.s.ParentSpanID})
}
func (v pulledView) SpanKind() trace.SpanKind                    { return v.s.Kind }
func (v pulledView) StartTime() time.Time                        { return v.s.Start }
func (v pulledView) EndTime() time.Time                          { return v.s.End }
func (v pulledView) Attributes() []attribute.KeyValue            { return v.s.Attributes }
func (v pulledView) Links() []sdktrace.Link                      { return v.s.Links }
func (v pulledView) Events() []sdktrace.Event                    { return v.s.Events }
func (v pulledView) Status() sdktrace.Status                     { return v.s.Status }
func (v pulledView) InstrumentationScope() instrumentation.Scope { return v.s.Scope }
func (v pulledView) DroppedAttributes() int                      { return v.s.DroppedAttributes }
func (v pulledView) DroppedLinks() int                           { return v.s.DroppedLinks }
func (v pulledView) DroppedEvents() int                          { return v.s.DroppedEvents }

// startRecordsProcessor starts a records processor with cfg, into a sink.
func startRecordsProcessor(t *testing.T, cfg *ProcessorConfig) (processor.Traces, *consumertest.TracesSink) {
	t.Helper()
	sink := new(consumertest.TracesSink)
	if cfg.Directory == "" && cfg.StateDirectory == "" {
		cfg.StateDirectory = t.TempDir() // not the user's cache directory
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := NewProcessorFactory().CreateTraces(context.Background(), processortest.NewNopSettings(componentType), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return p, sink
}

// otlpInto is an OTLP/HTTP endpoint (host:port) that gives what it
// receives to p, as a Collector's receiver does.
func otlpInto(t *testing.T, p processor.Traces) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err == nil {
			err = req.UnmarshalProto(body)
		}
		if err == nil {
			err = p.ConsumeTraces(r.Context(), req.Traces())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		out, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// cacheServerTraffic runs the four-path test's workload against three
// cacheservers sending every span to endpoint.
func cacheServerTraffic(t *testing.T, endpoint string) {
	bin := filepath.Join(t.TempDir(), "cacheserver")
	if b, err := exec.Command("go", "build", "-C", "internal/cacheserver", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build cacheserver: %v\n%s", err, b)
	}
	servers := make([]*cacheServer, len(fourPathInstances))
	for i, in := range fourPathInstances {
		servers[i] = startCacheServer(t, bin, "-instance", in.id, "-host", in.host, "-otlp", endpoint)
	}
	for _, w := range fourPathWorkload {
		w.do(t, servers)
		servers[w.inst].flush(t)
	}
	for _, s := range servers {
		s.stop(t)
	}
}

// awkwardTraffic is spans the mapping has something to say of, each of a
// session that changes something (kept), in requests of their own and
// among plain ones: a sender whose clock runs an hour ahead, times that
// cannot be right, attributes the sender's limits dropped, a huge one,
// heavy attributes below level full, unspecified and invalid span kinds,
// marks explicit and implicit, invalid records.kind and records.effect,
// records.* attributes of the contract's own, events before the start,
// links, statuses, trace states, values the API has no type for, and a
// replayed session.
func awkwardTraffic(now time.Time) []ptrace.Traces {
	ts := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(now.Add(d)) }
	n := 0
	var out []ptrace.Traces
	batch := func(instance string, res func(pcommon.Map), spans ...func(ptrace.Span)) {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "awkward")
		rs.Resource().Attributes().PutStr("service.instance.id", instance)
		if res != nil {
			res(rs.Resource().Attributes())
		}
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("awkward/scope")
		ss.Scope().SetVersion("v1.2")
		for _, f := range spans {
			n++
			s := ss.Spans().AppendEmpty()
			s.SetName(fmt.Sprint("span ", n))
			s.SetTraceID(pcommon.TraceID{0xaa, byte(n >> 8), byte(n), 15: 1})
			s.SetSpanID(pcommon.SpanID{0xbb, byte(n >> 8), byte(n), 7: 1})
			if instance == "odd" { // one trace, kept by trace too
				s.SetTraceID(pcommon.TraceID{0xee, 15: 1})
			}
			s.SetKind(ptrace.SpanKindServer)
			s.SetStartTimestamp(ts(-time.Second))
			s.SetEndTimestamp(ts(-time.Second + time.Millisecond))
			s.SetFlags(0x101)
			s.Attributes().PutStr("records.kind", "step")
			s.Attributes().PutInt("n", int64(n))
			f(s)
		}
		out = append(out, td)
	}
	changed := func(s ptrace.Span) { s.Attributes().PutStr("records.effect", "changed") }
	plain := func(ptrace.Span) {}
	// A plain kept session: every span goes as it came.
	batch("plain", nil, changed, plain, plain, plain, plain)
	batch("plain", nil, plain, plain, plain)
	// A sender whose clock is an hour ahead: every time moves.
	batch("ahead", nil, func(s ptrace.Span) {
		changed(s)
		s.SetStartTimestamp(ts(time.Hour))
		s.SetEndTimestamp(ts(time.Hour + time.Millisecond))
	}, func(s ptrace.Span) {
		s.SetStartTimestamp(ts(time.Hour - time.Second))
		s.SetEndTimestamp(ts(time.Hour))
	})
	odd := []func(ptrace.Span){
		changed,
		func(s ptrace.Span) { s.SetStartTimestamp(0) },                        // zero start
		func(s ptrace.Span) { s.SetEndTimestamp(ts(-time.Hour)) },             // ends before it starts
		func(s ptrace.Span) { s.SetStartTimestamp(ts(-30 * 24 * time.Hour)) }, // a month long
		func(s ptrace.Span) { s.SetDroppedAttributesCount(3) },                // the sender's limit
		func(s ptrace.Span) { s.Attributes().PutStr("big", strings.Repeat("x", 200<<10)) },
		func(s ptrace.Span) { s.Attributes().PutStr("huge", strings.Repeat("x", 16<<20)) },   // no store takes it   // huge, kept
		func(s ptrace.Span) { s.Attributes().PutStr("records.full.body", "heavy") },          // left out at basic
		func(s ptrace.Span) { s.SetKind(ptrace.SpanKindUnspecified) },                        // unspecified
		func(s ptrace.Span) { s.SetKind(ptrace.SpanKind(9)) },                                // no kind at all
		func(s ptrace.Span) { s.Attributes().Remove("records.kind") },                        // an implicit mark
		func(s ptrace.Span) { s.Attributes().PutStr("records.kind", "marks") },               // an explicit one
		func(s ptrace.Span) { s.Attributes().PutStr("records.kind", "/step/") },              // not canonical
		func(s ptrace.Span) { s.Attributes().PutInt("records.kind", 7) },                     // not a string
		func(s ptrace.Span) { s.Attributes().PutStr("records.effect", "maybe") },             // invalid effect
		func(s ptrace.Span) { s.Attributes().PutStr("records.effect", "observed") },          // said
		func(s ptrace.Span) { s.Attributes().PutInt("records.seq", 12) },                     // the contract's own
		func(s ptrace.Span) { s.Attributes().PutStr("records.span.start", "yesterday") },     // and another
		func(s ptrace.Span) { s.Attributes().PutEmptyMap("m").PutStr("a", "b") },             // no API type
		func(s ptrace.Span) { s.Attributes().PutEmptyBytes("b").FromRaw([]byte{1, 2}) },      // nor this
		func(s ptrace.Span) { s.Attributes().PutEmptySlice("empty") },                        // an empty array
		func(s ptrace.Span) { s.Attributes().PutEmptySlice("ints").AppendEmpty().SetInt(4) }, // an int array
		func(s ptrace.Span) { // events, one before the start
			e := s.Events().AppendEmpty()
			e.SetName("before")
			e.SetTimestamp(ts(-2 * time.Second))
		},
		func(s ptrace.Span) { // events within, with attributes
			e := s.Events().AppendEmpty()
			e.SetName("within")
			e.SetTimestamp(ts(-time.Second + time.Microsecond))
			e.Attributes().PutStr("k", "v")
			e.SetDroppedAttributesCount(2)
		},
		func(s ptrace.Span) { // a heavy attribute of an event
			e := s.Events().AppendEmpty()
			e.SetName("heavy")
			e.SetTimestamp(ts(-time.Second))
			e.Attributes().PutStr("records.full.x", "y")
		},
		func(s ptrace.Span) { // a link
			l := s.Links().AppendEmpty()
			l.SetTraceID(pcommon.TraceID{1, 15: 2})
			l.SetSpanID(pcommon.SpanID{3, 7: 4})
			l.TraceState().FromRaw("a=1")
			l.Attributes().PutBool("b", true)
			l.SetFlags(1)
		},
		func(s ptrace.Span) { s.Status().SetCode(ptrace.StatusCodeError); s.Status().SetMessage("broke") },
		func(s ptrace.Span) { s.Status().SetCode(ptrace.StatusCodeOk); s.Status().SetMessage("said anyway") },
		func(s ptrace.Span) { s.TraceState().FromRaw("vendor=a, other=b") },
		func(s ptrace.Span) { s.TraceState().FromRaw("not a trace state") },
		func(s ptrace.Span) { s.SetParentSpanID(pcommon.SpanID{9, 7: 9}); s.SetFlags(0x301) }, // a remote parent
		func(s ptrace.Span) { s.SetDroppedEventsCount(1); s.SetDroppedLinksCount(2) },
		func(s ptrace.Span) { s.SetName("bad \xff utf-8") },
	}
	batch("odd", nil, odd...)
	// The same, one a request, after the session is kept; and a span that
	// ends an hour from now, which would have set the session's clock
	// ahead in its first request.
	for _, f := range odd[1:] {
		batch("odd", nil, f)
	}
	batch("odd", nil, func(s ptrace.Span) { s.SetEndTimestamp(ts(time.Hour)) })
	// A replayed session: its Resource names it.
	batch("replayed", func(m pcommon.Map) { m.PutStr("records.session.id", "1700000000000000000") }, func(s ptrace.Span) {
		changed(s)
		s.Attributes().PutInt("records.seq", 4)
	}, func(s ptrace.Span) { s.Attributes().PutInt("records.seq", 5) })
	// A child before its parent, in two requests: it waits, and is made
	// again from its record.
	batch("waits", nil, changed)
	batch("waits", nil, func(s ptrace.Span) {
		changed(s)
		s.SetTraceID(pcommon.TraceID{0xcc, 15: 1})
		s.SetParentSpanID(pcommon.SpanID{0xdd, 7: 1})
		s.SetKind(ptrace.SpanKindInternal)
	})
	batch("waits", nil, func(s ptrace.Span) {
		s.SetTraceID(pcommon.TraceID{0xcc, 15: 1})
		s.SetSpanID(pcommon.SpanID{0xdd, 7: 1})
		s.SetStartTimestamp(ts(-2 * time.Second))
	})
	return out
}

// checkHandedOn reads back every span the processor handed on, by pull's
// mapping, and compares it with what the store in dir holds under its
// session and seq, byte for byte; every record stored must have been
// handed on once. It returns, by the sender's service.instance.id, how
// many spans it compared and how many of them went on as they came (the
// flags of a span made again from its record never say it is sampled; a
// span as it came keeps its sender's).
func checkHandedOn(t *testing.T, dir string, sink *consumertest.TracesSink) (handed, asCame map[string]int) {
	t.Helper()
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := map[string][]byte{}
	for e, err := range st.Scan([]byte("records/v1/"), []byte("records/v10")) {
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, ok := importer.EntryStamp(e); ok {
			stored[string(e.Key)] = bytes.Clone(e.Value)
		}
	}
	handed, asCame = map[string]int{}, map[string]int{}
	seen := map[string]bool{}
	eachHandedOn(t, sink, func(instance string, sp *importer.Span, flags uint32, kind string, rec sessions.Stamped[sessions.Record]) {
		handed[instance]++
		if flags&0xff != 0 {
			asCame[instance]++
		}
		key := string(recordKey(kind, rec.Stamp.Session, rec.Stamp.Seq))
		want, ok := stored[key]
		if !ok {
			t.Errorf("span %q handed on as %s %d/%d: the store holds no such record", sp.Name, kind, rec.Stamp.Session, rec.Stamp.Seq)
			return
		}
		if seen[key] {
			t.Errorf("span %q (%s %d/%d) handed on twice", sp.Name, kind, rec.Stamp.Session, rec.Stamp.Seq)
		}
		seen[key] = true
		var held sessions.Stamped[sessions.Record]
		var row sessions.Session
		if _, err := importer.DecodeEntry(sessions.Entry{Key: []byte(key), Value: want}, &held, &row); err != nil {
			t.Fatal(err)
		}
		if namesAdded(held.Record.Attributes) {
			// docs/MAPPING.md §8.2: a record's own attribute named
			// as one a span adds (records.seq, ...) is read back as
			// that: no span, made again or not, gives it back.
			return
		}
		got, err := rec.AppendCBOR(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("span %q (flags %#x) pulls back as\n%+v\nthe store holds\n%+v", sp.Name, flags, rec, held)
		}
	})
	if len(seen) != len(stored) {
		t.Errorf("%d records stored, %d handed on", len(stored), len(seen))
	}
	return handed, asCame
}

// eachHandedOn gives f each span sink holds but the tallies', as pull
// reads it: the instance of its Resource, the span converted as the
// processor converts a request, its OTLP flags (as it came, the sender's;
// made again, none), and the record it reads back as, of kind.
func eachHandedOn(t *testing.T, sink *consumertest.TracesSink, f func(instance string, sp *importer.Span, flags uint32, kind string, rec sessions.Stamped[sessions.Record])) {
	t.Helper()
	for _, td := range sink.AllTraces() {
		c := batches(td)
		for i, b := range c.batches {
			s, _, err := spanbridge.FromResource(b.Resource)
			if err != nil {
				t.Fatalf("a Resource handed on that pull does not take: %v", err)
			}
			instance, _ := td.ResourceSpans().At(i).Resource().Attributes().Get("service.instance.id")
			var flags []uint32
			for _, ss := range td.ResourceSpans().At(i).ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					flags = append(flags, sp.Flags())
				}
			}
			for j := range b.Spans {
				sp := &b.Spans[j]
				if sp.Name == spanbridge.TallyName {
					continue
				}
				kind, rec, err := spanbridge.FromSpan(s.ID, pulledView{sp})
				if err != nil {
					t.Fatalf("span %q handed on is no record to pull: %v", sp.Name, err)
				}
				f(instance.Str(), sp, flags[j], kind, rec)
			}
		}
		c.release()
	}
}

// namesAdded reports whether a record has an attribute of its own named
// as one its span carries besides (docs/MAPPING.md §8.2).
func namesAdded(attrs sessions.Attrs) bool {
	for _, a := range attrs {
		switch attribute.Key(a.Key) {
		case spanbridge.SeqKey, spanbridge.InputsKey, spanbridge.SpanKindKey, "records.derived_ids":
			return true
		}
	}
	return false
}

// recordKey is the store's key of a record (keys.Record).
func recordKey(kind string, session sessions.SessionID, seq uint64) []byte {
	k := append([]byte("records/v1/"+kind), 0)
	for _, v := range []uint64{uint64(session), seq} {
		for i := 7; i >= 0; i-- {
			k = append(k, byte(v>>(8*i)))
		}
	}
	return k
}

func TestProcessorHandsOnWhatItStores(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs three cacheservers")
	}
	for _, keepBy := range []string{"session", "trace"} {
		t.Run(keepBy, func(t *testing.T) {
			cfg := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
			cfg.Directory = filepath.Join(t.TempDir(), "store")
			cfg.KeepBy = keepBy
			p, sink := startRecordsProcessor(t, cfg)
			as0, re0 := handedAsReceived.Load(), handedRemade.Load()
			cacheServerTraffic(t, otlpInto(t, p))
			for _, td := range awkwardTraffic(time.Now()) {
				if err := p.ConsumeTraces(context.Background(), td); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			handed, asCame := checkHandedOn(t, cfg.Directory, sink)
			as, re := handedAsReceived.Load()-as0, handedRemade.Load()-re0
			t.Logf("handed on, as they came, by sender: %v, %v; counted %d as they came, %d made again", handed, asCame, as, re)
			total, came := 0, 0
			for inst, n := range handed {
				total, came = total+n, came+asCame[inst]
			}
			if int64(came) != as || int64(total) != as+re {
				t.Errorf("%d spans handed on, %d as they came; the processor counted %d and %d made again", total, came, as, re)
			}
			// Same-machine senders whose sessions are kept from their
			// first request: their spans go on as they came.
			cache := 0
			for inst, n := range handed {
				if strings.HasPrefix(inst, "cache-") {
					cache += n
					if asCame[inst] < n*9/10 {
						t.Errorf("%s: %d of %d spans as they came: want (nearly) all", inst, asCame[inst], n)
					}
				}
			}
			plain := 8 // its session is kept; by trace, the one trace that changed
			if keepBy == "trace" {
				plain = 1
			}
			if cache < 20 || handed["plain"] != plain || asCame["plain"] != plain {
				t.Errorf("%d spans of the cacheservers; %d of the plain sender's %d, %d as they came: want all", cache, handed["plain"], plain, asCame["plain"])
			}
			// What waited for its parent across requests, or moved with
			// its sender's clock, is made again.
			if asCame["ahead"] != 0 || handed["waits"] != 3 || asCame["waits"] != 2 {
				t.Errorf("%d of the skewed sender's spans as they came; %d of the waiting one's 3 handed on, %d as they came (want 2)", asCame["ahead"], handed["waits"], asCame["waits"])
			}
		})
	}
}

// Senders' requests in flight at once, into one session: each request
// brings the children of its own traces and the parents of another
// request's, sent at the same time by another client, so that a record
// is placed (and handed on) by a request other than its span's, in flight
// or done. Each span goes on once, as it came or made again, and reads
// back as the store's record. Without a directory of records, the
// records of the spans that go on as they came are queued unencoded
// (importer/internal/unencoded): each span still goes on once.
func TestProcessorHandsOnConcurrently(t *testing.T) {
	t.Run("directory", func(t *testing.T) { handOnConcurrently(t, true) })
	t.Run("state only", func(t *testing.T) { handOnConcurrently(t, false) })
}

// handOnConcurrently is TestProcessorHandsOnConcurrently with a
// directory of records, or with a state directory only.
func handOnConcurrently(t *testing.T, directory bool) {
	cfg := NewProcessorFactory().CreateDefaultConfig().(*ProcessorConfig)
	if directory {
		cfg.Directory = filepath.Join(t.TempDir(), "store")
	}
	p, sink := startRecordsProcessor(t, cfg)
	now := time.Now()
	ts := func(d time.Duration) pcommon.Timestamp { return pcommon.NewTimestampFromTime(now.Add(d)) }
	const clients, rounds, traces = 4, 40, 10
	request := func(c, r int) ptrace.Traces {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "concurrent")
		rs.Resource().Attributes().PutStr("service.instance.id", "concurrent")
		ss := rs.ScopeSpans().AppendEmpty()
		ss.Scope().SetName("concurrent")
		span := func(owner, tr int, id byte) ptrace.Span {
			s := ss.Spans().AppendEmpty()
			s.SetTraceID(pcommon.TraceID{byte(owner + 1), byte(r), byte(tr), 15: 1})
			s.SetSpanID(pcommon.SpanID{7: id})
			s.SetName(fmt.Sprint("span ", owner, r, tr, id))
			s.SetKind(ptrace.SpanKindInternal)
			s.SetStartTimestamp(ts(time.Duration(id) * time.Microsecond))
			s.SetEndTimestamp(ts(time.Millisecond))
			s.SetFlags(0x101)
			s.Attributes().PutStr("records.kind", "step")
			s.Attributes().PutStr("records.effect", "changed")
			return s
		}
		for tr := range traces {
			span(c, tr, 2).SetParentSpanID(pcommon.SpanID{7: 1}) // its parent comes with another client
			span((c+clients-1)%clients, tr, 1)                   // another client's child's parent
			span(c, tr+traces, 1)                                // a root of its own
		}
		return td
	}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for r := range rounds {
				if err := p.ConsumeTraces(context.Background(), request(c, r)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var handed, asCame map[string]int
	if directory {
		handed, asCame = checkHandedOn(t, cfg.Directory, sink)
	} else {
		handed, asCame = map[string]int{}, map[string]int{}
		once := map[[24]byte]bool{}
		eachHandedOn(t, sink, func(instance string, sp *importer.Span, flags uint32, _ string, _ sessions.Stamped[sessions.Record]) {
			var id [24]byte
			copy(id[:16], sp.TraceID[:])
			copy(id[16:], sp.SpanID[:])
			if once[id] {
				t.Errorf("span %q handed on twice", sp.Name)
			}
			once[id] = true
			handed[instance]++
			if flags&0xff != 0 {
				asCame[instance]++
			}
		})
	}
	t.Logf("%d spans handed on, %d as they came", handed["concurrent"], asCame["concurrent"])
	if want := clients * rounds * traces * 3; handed["concurrent"] != want || asCame["concurrent"] < want/3 {
		t.Errorf("%d spans handed on, %d as they came: want %d, at least a third as they came", handed["concurrent"], asCame["concurrent"], want)
	}
}
