package exporter

import (
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Spans of a kept session that wait for their parents are written ahead
// (docs/FORMAT.md §12) before the sender is told they are stored, and
// recorded when their parents come. They are written together: the spans
// a round writes ahead go in entries of up to maxPendingBytes, each
// emptied once every span in it is placed. One entry a span made Badger
// hold, flush and compact a write, and an emptying, for each of them: a
// gateway whose senders' parents never came peaked at 430 MiB of
// anonymous memory, most of it Badger's compactions (issue 44.5).

// maxPendingBytes bounds a pending entry's value: below Badger's value
// threshold, so that it lives in the tree and goes with its compaction,
// never in the value log.
const maxPendingBytes = 64 << 10

// writePending writes ahead every span of the kept session rs (whose id
// is id) that waits and is not written ahead yet, in entries queued in its
// Recorder. im.mu is held.
func (im *Importer) writePending(rs *remoteSession, id uint64) {
	var chunk []cbor.RawMessage
	var spans []*pendingSpan
	size := 0
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		v, err := encodeChunk(pendingChunk{Seq: rs.rec.NextSeq(), Spans: chunk})
		if err != nil {
			rs.problems += int64(len(chunk))
			im.reports.once("pending", fmt.Errorf("otelrecords: importer: spans cannot be written ahead: %w", err))
		} else {
			rs.nextPending++
			for _, p := range spans {
				p.entry = rs.nextPending
			}
			rs.pendingEntries[rs.nextPending] = len(spans)
			rs.rec.QueueEntry(sessions.Entry{Key: keys.ImportPendingSpan(id, rs.nextPending), Value: v})
		}
		chunk, spans, size = chunk[:0], spans[:0], 0
	}
	for _, t := range rs.traces {
		for _, p := range t.pending {
			if p.entry != 0 {
				continue
			}
			v, err := encodePending(p)
			if err != nil {
				rs.problems++
				im.reports.once("pending", fmt.Errorf("otelrecords: importer: span %q cannot be written ahead: %w", cut(p.span.Name, 64), err))
				continue
			}
			if size+len(v) > maxPendingBytes {
				flush()
			}
			chunk, spans, size = append(chunk, v), append(spans, p), size+len(v)
		}
	}
	flush()
}

// placedPending notes that a span written ahead in pending entry n of rs
// is placed: the entry is emptied once all of its spans are. im.mu is
// held.
func (im *Importer) placedPending(rs *remoteSession, n uint64) {
	left, ok := rs.pendingEntries[n]
	if !ok {
		return
	}
	if left > 1 {
		rs.pendingEntries[n] = left - 1
		return
	}
	delete(rs.pendingEntries, n)
	if id, _, ok := rs.rec.Started(); ok {
		rs.rec.QueueEntry(sessions.Entry{Key: keys.ImportPendingSpan(uint64(id), n), Value: []byte{}})
	}
}

// pendingChunk is a pending entry's value: the spans, and the seq their
// session was at when they were written ahead (a span of them recorded
// since has a seq from there on).
type pendingChunk struct {
	Seq   uint64            `cbor:"seq"`
	Spans []cbor.RawMessage `cbor:"spans"`
}

// pendingWire is a span written ahead: everything an ImportedSpan holds.
type pendingWire struct {
	TraceID    []byte         `cbor:"trace"`
	SpanID     []byte         `cbor:"span"`
	Parent     []byte         `cbor:"parent,omitempty"`
	Remote     bool           `cbor:"remote,omitempty"`
	TraceState string         `cbor:"state,omitempty"`
	Name       string         `cbor:"name"`
	Kind       int            `cbor:"kind,omitempty"`
	Start      [2]int64       `cbor:"start"`
	End        [2]int64       `cbor:"end"`
	Attributes sessions.Attrs `cbor:"attrs,omitempty"`
	Events     []eventWire    `cbor:"events,omitempty"`
	Links      []linkWire     `cbor:"links,omitempty"`
	Status     int            `cbor:"status,omitempty"`
	StatusText string         `cbor:"status_text,omitempty"`
	Scope      [3]string      `cbor:"scope"`
	Dropped    [3]int         `cbor:"dropped,omitempty"`
}

type eventWire struct {
	Name       string         `cbor:"name"`
	Time       [2]int64       `cbor:"time"`
	Attributes sessions.Attrs `cbor:"attrs,omitempty"`
	Dropped    int            `cbor:"dropped,omitempty"`
}

type linkWire struct {
	TraceID    []byte         `cbor:"trace"`
	SpanID     []byte         `cbor:"span"`
	State      string         `cbor:"state,omitempty"`
	Attributes sessions.Attrs `cbor:"attrs,omitempty"`
	Dropped    int            `cbor:"dropped,omitempty"`
}

func wireTime(t time.Time) [2]int64 { return [2]int64{t.Unix(), int64(t.Nanosecond())} }
func fromWire(t [2]int64) time.Time {
	if t == wireTime(time.Time{}) {
		return time.Time{}
	}
	return time.Unix(t[0], t[1])
}

// encodePending encodes a waiting span for a pending entry.
func encodePending(p *pendingSpan) ([]byte, error) {
	s := &p.span
	w := pendingWire{TraceID: s.TraceID[:], SpanID: s.SpanID[:], Remote: s.ParentRemote, TraceState: s.TraceState,
		Name: s.Name, Kind: int(s.Kind), Start: wireTime(s.Start), End: wireTime(s.End), Attributes: spanbridge.Attrs(s.Attributes),
		Status: int(s.Status.Code), StatusText: s.Status.Description, Scope: [3]string{s.Scope.Name, s.Scope.Version, s.Scope.SchemaURL},
		Dropped: [3]int{s.DroppedAttributes, s.DroppedEvents, s.DroppedLinks}}
	if s.ParentSpanID.IsValid() {
		w.Parent = s.ParentSpanID[:]
	}
	for _, e := range s.Events {
		w.Events = append(w.Events, eventWire{Name: e.Name, Time: wireTime(e.Time), Attributes: spanbridge.Attrs(e.Attributes), Dropped: e.DroppedAttributeCount})
	}
	for _, l := range s.Links {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		w.Links = append(w.Links, linkWire{TraceID: tid[:], SpanID: sid[:], State: l.SpanContext.TraceState().String(),
			Attributes: spanbridge.Attrs(l.Attributes), Dropped: l.DroppedAttributeCount})
	}
	return cbor.Marshal(w)
}

// pendingSnappy is the first byte of a pending entry whose CBOR is
// compressed as one Snappy block (a CBOR map, which an entry of one span
// of an earlier version is, begins with 0xa0 to 0xbf).
const pendingSnappy = 0x01

// encodeChunk encodes a pending entry's value: its CBOR compressed, as
// the store's chunks of records are. Spans repeat their attribute names,
// and often their values; and Badger, which sizes the tables it builds
// by their compressed size, holds a table's data uncompressed while it
// builds it: values that compress twentyfold made its compactions hold
// hundreds of megabytes.
func encodeChunk(c pendingChunk) ([]byte, error) {
	raw, err := cbor.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+s2.MaxEncodedLen(len(raw)))
	out[0] = pendingSnappy
	return out[:1+len(s2.EncodeSnappy(out[1:], raw))], nil
}

// decodePending decodes a pending entry's spans, and the seq its session
// was at when they were written.
func decodePending(b []byte) ([]*pendingSpan, uint64, error) {
	if len(b) > 0 && b[0] == pendingSnappy {
		n, err := s2.DecodedLen(b[1:])
		if err != nil {
			return nil, 0, err
		}
		if n > keys.MaxValueSize {
			return nil, 0, fmt.Errorf("pending entry of %d bytes decoded, over %d", n, keys.MaxValueSize)
		}
		if b, err = s2.Decode(make([]byte, n), b[1:]); err != nil {
			return nil, 0, err
		}
	}
	var c pendingChunk
	if err := cbor.Unmarshal(b, &c); err != nil {
		return nil, 0, err
	}
	if len(c.Spans) == 0 {
		// One span, as an earlier version wrote each: when its session
		// was at is not said, so every record of it is read back.
		p, err := decodePendingSpan(b)
		if err != nil {
			return nil, 0, err
		}
		return []*pendingSpan{p}, 0, nil
	}
	out := make([]*pendingSpan, 0, len(c.Spans))
	for _, raw := range c.Spans {
		p, err := decodePendingSpan(raw)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, p)
	}
	return out, c.Seq, nil
}

// decodePendingSpan decodes one span of a pending entry.
func decodePendingSpan(b []byte) (*pendingSpan, error) {
	var w pendingWire
	if err := cbor.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	if len(w.TraceID) != 16 || len(w.SpanID) != 8 || (len(w.Parent) != 0 && len(w.Parent) != 8) {
		return nil, fmt.Errorf("pending span with ids of %d, %d and %d bytes", len(w.TraceID), len(w.SpanID), len(w.Parent))
	}
	s := ImportedSpan{ParentRemote: w.Remote, TraceState: w.TraceState, Name: w.Name, Kind: trace.SpanKind(w.Kind),
		Start: fromWire(w.Start), End: fromWire(w.End), Attributes: spanbridge.Attributes(w.Attributes),
		Status:            sdktrace.Status{Code: codes.Code(w.Status), Description: w.StatusText},
		Scope:             instrumentation.Scope{Name: w.Scope[0], Version: w.Scope[1], SchemaURL: w.Scope[2]},
		DroppedAttributes: w.Dropped[0], DroppedEvents: w.Dropped[1], DroppedLinks: w.Dropped[2]}
	copy(s.TraceID[:], w.TraceID)
	copy(s.SpanID[:], w.SpanID)
	copy(s.ParentSpanID[:], w.Parent)
	for _, e := range w.Events {
		s.Events = append(s.Events, sdktrace.Event{Name: e.Name, Time: fromWire(e.Time), Attributes: spanbridge.Attributes(e.Attributes), DroppedAttributeCount: e.Dropped})
	}
	for _, l := range w.Links {
		var tid trace.TraceID
		var sid trace.SpanID
		copy(tid[:], l.TraceID)
		copy(sid[:], l.SpanID)
		ts, _ := trace.ParseTraceState(l.State)
		s.Links = append(s.Links, sdktrace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceState: ts}),
			Attributes: spanbridge.Attributes(l.Attributes), DroppedAttributeCount: l.Dropped})
	}
	return &pendingSpan{span: s, size: s.size()}, nil
}
