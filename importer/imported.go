package importer

import (
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer/internal/heldsize"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Span is an ended span that did not come through this process's
// OpenTelemetry SDK: one that another program sent (as OTLP, to a
// Collector, say), handed to an Importer. It is a plain struct of the
// library's, so that a converter (the Collector component's, from pdata)
// needs nothing of ours but this, and the library needs nothing of the
// Collector's. Its fields are those of an OTLP span; the Resource is
// given beside the spans (Batch), the instrumentation scope with
// each span.
//
// An Importer keeps nothing of a span past Import (one it holds is a
// copy), so the caller may reuse its slices (Attributes, Events, Links)
// once Import has returned; not while it runs.
type Span struct {
	// TraceID and SpanID identify the span; a span without a valid pair
	// is refused.
	TraceID trace.TraceID
	SpanID  trace.SpanID
	// ParentSpanID is the parent's span id; zero for a root.
	ParentSpanID trace.SpanID
	// ParentRemote says the parent ran in another process (OTLP's span
	// flags say so when the sender knows): the span is then the root of
	// its trace in its sender, as a span without a parent is.
	ParentRemote bool
	// TraceState is the W3C tracestate header value; "" for none.
	TraceState string
	// Name is the span's name.
	Name string
	// Kind is the span kind.
	Kind trace.SpanKind
	// Start and End are the span's own times, as its sender's clock read
	// them: the record is stamped by Start.
	Start, End time.Time
	// Attributes are the span's attributes, records.kind and
	// records.effect among them.
	Attributes []attribute.KeyValue
	// Events are the span's events.
	Events []sdktrace.Event
	// Links are the span's links.
	Links []sdktrace.Link
	// Status is the span's status.
	Status sdktrace.Status
	// Scope is the instrumentation scope that made the span.
	Scope instrumentation.Scope
	// DroppedAttributes, DroppedEvents and DroppedLinks count what the
	// sender's limits dropped.
	DroppedAttributes, DroppedEvents, DroppedLinks int
	// Origin is the caller's reference to the span, 0 for none, given
	// back by Config.AsReceived; its meaning is the caller's.
	Origin uint64
}

// Batch is spans of one sender process, with that process's
// Resource: OTLP's ResourceSpans, flattened over its scopes.
type Batch struct {
	// Resource holds the attributes of the sender's Resource
	// (service.name, service.instance.id, process.pid, host.name, ...):
	// they say which session the spans belong to, and describe it.
	Resource []attribute.KeyValue
	// Spans are the ended spans.
	Spans []Span
}

// importedView shows an Span as a spanbridge.Source, so that an
// imported span is mapped by the same code as a span of the SDK.
type importedView struct {
	s          *Span
	sc, pc     trace.SpanContext
	start, end time.Time // the span's times on the gateway's clock (senderClock)
}

var _ spanbridge.Source = (*importedView)(nil)

// set makes v show s as a spanbridge.Source. A trace state that does not
// parse is left out, as the SDK leaves out one it cannot carry.
func (v *importedView) set(s *Span) {
	ts, _ := trace.ParseTraceState(s.TraceState)
	*v = importedView{s: s, start: s.Start, end: s.End}
	v.sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.TraceID, SpanID: s.SpanID, TraceState: ts, TraceFlags: trace.FlagsSampled})
	if s.ParentSpanID.IsValid() {
		v.pc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.TraceID, SpanID: s.ParentSpanID, TraceFlags: trace.FlagsSampled, Remote: s.ParentRemote})
	}
}

func (v *importedView) Name() string                                { return v.s.Name }
func (v *importedView) SpanContext() trace.SpanContext              { return v.sc }
func (v *importedView) Parent() trace.SpanContext                   { return v.pc }
func (v *importedView) SpanKind() trace.SpanKind                    { return v.s.Kind }
func (v *importedView) StartTime() time.Time                        { return v.start }
func (v *importedView) EndTime() time.Time                          { return v.end }
func (v *importedView) Attributes() []attribute.KeyValue            { return v.s.Attributes }
func (v *importedView) Links() []sdktrace.Link                      { return v.s.Links }
func (v *importedView) Events() []sdktrace.Event                    { return v.s.Events }
func (v *importedView) Status() sdktrace.Status                     { return v.s.Status }
func (v *importedView) InstrumentationScope() instrumentation.Scope { return v.s.Scope }
func (v *importedView) DroppedAttributes() int                      { return v.s.DroppedAttributes }
func (v *importedView) DroppedLinks() int                           { return v.s.DroppedLinks }
func (v *importedView) DroppedEvents() int                          { return v.s.DroppedEvents }

// size is what an imported span held costs in memory, as it counts
// against the bytes an Importer holds: the pendingSpan that holds it, a
// slot for each of its attributes, events and links, and the bytes of
// its strings, each rounded up as the allocator does. A span that waits
// alone in its trace costs its trace's entry too (liveTraceBytes).
// Measured against the heap (TestImportHeldSpansCountTheirCost), it errs
// high.
func (s *Span) size() int {
	n := pendingSpanBytes + heldsize.Str(s.Name) + heldsize.Str(s.TraceState) + heldsize.Str(s.Scope.Name) + heldsize.Str(s.Scope.Version) + heldsize.Str(s.Scope.SchemaURL)
	n += heldsize.Attrs(s.Attributes)
	for i := range s.Events {
		n += eventBytes + heldsize.Str(s.Events[i].Name) + heldsize.Attrs(s.Events[i].Attributes)
	}
	for i := range s.Links {
		n += linkBytes + heldsize.Attrs(s.Links[i].Attributes)
	}
	return n
}

// What the parts of a held span cost, rounded up to the allocator's size
// classes: the pendingSpan (408 bytes), an event's and a link's (an
// attribute's is heldsize.KV), and a trace's entry with its map of
// waiting spans.
const (
	pendingSpanBytes = 416
	eventBytes       = 96
	linkBytes        = 112
	liveTraceBytes   = 320
)

// detach gives s copies of the slices its fields refer to (attributes,
// events, links and theirs), so that a span held past Import keeps
// nothing of the batch it came in, whose memory the caller may reuse.
func (s *Span) detach() {
	s.Attributes = slices.Clone(s.Attributes)
	if s.Events != nil {
		s.Events = slices.Clone(s.Events)
		for i := range s.Events {
			s.Events[i].Attributes = slices.Clone(s.Events[i].Attributes)
		}
	}
	if s.Links != nil {
		s.Links = slices.Clone(s.Links)
		for i := range s.Links {
			s.Links[i].Attributes = slices.Clone(s.Links[i].Attributes)
		}
	}
}
