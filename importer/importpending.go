package importer

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer/internal/ahead"
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
		v, err := ahead.EncodeChunk(ahead.Chunk{Seq: rs.rec.NextSeq(), Spans: chunk})
		if err != nil {
			rs.problems += int64(len(chunk))
			im.reports.Once("pending", fmt.Errorf("otelrecords: importer: spans cannot be written ahead: %w", err))
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
				im.reports.Once("pending", fmt.Errorf("otelrecords: importer: span %q cannot be written ahead: %w", cut(p.span.Name, 64), err))
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

// encodePending encodes a waiting span for a pending entry.
func encodePending(p *pendingSpan) ([]byte, error) {
	s := &p.span
	w := ahead.Span{TraceID: s.TraceID[:], SpanID: s.SpanID[:], Remote: s.ParentRemote, TraceState: s.TraceState,
		Name: s.Name, Kind: int(s.Kind), Start: ahead.Time(s.Start), End: ahead.Time(s.End), Attributes: spanbridge.Attrs(s.Attributes),
		Status: int(s.Status.Code), StatusText: s.Status.Description, Scope: [3]string{s.Scope.Name, s.Scope.Version, s.Scope.SchemaURL},
		Dropped: [3]int{s.DroppedAttributes, s.DroppedEvents, s.DroppedLinks}}
	if s.ParentSpanID.IsValid() {
		w.Parent = s.ParentSpanID[:]
	}
	for _, e := range s.Events {
		w.Events = append(w.Events, ahead.Event{Name: e.Name, Time: ahead.Time(e.Time), Attributes: spanbridge.Attrs(e.Attributes), Dropped: e.DroppedAttributeCount})
	}
	for _, l := range s.Links {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		w.Links = append(w.Links, ahead.Link{TraceID: tid[:], SpanID: sid[:], State: l.SpanContext.TraceState().String(),
			Attributes: spanbridge.Attrs(l.Attributes), Dropped: l.DroppedAttributeCount})
	}
	return cbor.Marshal(w)
}

// decodePending decodes a pending entry's spans, and the seq their
// session was at when they were written (see ahead.DecodeChunk).
func decodePending(b []byte) ([]*pendingSpan, uint64, error) {
	raws, seq, err := ahead.DecodeChunk(b)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*pendingSpan, 0, len(raws))
	for _, raw := range raws {
		p, err := decodePendingSpan(raw)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, p)
	}
	return out, seq, nil
}

// decodePendingSpan decodes one span of a pending entry.
func decodePendingSpan(b []byte) (*pendingSpan, error) {
	var w ahead.Span
	if err := cbor.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	if len(w.TraceID) != 16 || len(w.SpanID) != 8 || (len(w.Parent) != 0 && len(w.Parent) != 8) {
		return nil, fmt.Errorf("pending span with ids of %d, %d and %d bytes", len(w.TraceID), len(w.SpanID), len(w.Parent))
	}
	s := Span{ParentRemote: w.Remote, TraceState: w.TraceState, Name: w.Name, Kind: trace.SpanKind(w.Kind),
		Start: ahead.FromTime(w.Start), End: ahead.FromTime(w.End), Attributes: spanbridge.Attributes(w.Attributes),
		Status:            sdktrace.Status{Code: codes.Code(w.Status), Description: w.StatusText},
		Scope:             instrumentation.Scope{Name: w.Scope[0], Version: w.Scope[1], SchemaURL: w.Scope[2]},
		DroppedAttributes: w.Dropped[0], DroppedEvents: w.Dropped[1], DroppedLinks: w.Dropped[2]}
	copy(s.TraceID[:], w.TraceID)
	copy(s.SpanID[:], w.SpanID)
	copy(s.ParentSpanID[:], w.Parent)
	for _, e := range w.Events {
		s.Events = append(s.Events, sdktrace.Event{Name: e.Name, Time: ahead.FromTime(e.Time), Attributes: spanbridge.Attributes(e.Attributes), DroppedAttributeCount: e.Dropped})
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
