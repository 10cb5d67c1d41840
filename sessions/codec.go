package sessions

import (
	"fmt"
	"sync"
	"time"

	"github.com/fxamacker/cbor/v2"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// Decode limits: a store is untrusted input (it travels between machines),
// so no value may make a reader allocate without bound or recurse deeply.
// Writers refuse records beyond them (package internal/ground/cborwire).
const (
	maxNestedLevels  = cw.MaxNestedLevels
	maxArrayElements = cw.MaxArrayElements
	maxMapPairs      = cw.MaxMapPairs
)

// maxValueSize is the largest value a reader decodes, in bytes; larger ones
// are counted as undecodable. It is the largest value Badger stores (the
// size of its value-log files), above keys.MaxRecordSize, which writers
// keep to. With the decoding budget (cborwire.Budget: at most 56 bytes allocated
// per byte of a value) it bounds what one value can make a reader
// allocate.
const maxValueSize = keys.MaxValueSize

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	var err error
	// Core deterministic encoding: map keys sorted, shortest forms, so the
	// same record always encodes to the same bytes.
	eo := cbor.CoreDetEncOptions()
	eo.Time = cbor.TimeUnixDynamic
	if encMode, err = eo.EncMode(); err != nil {
		panic(err)
	}
	do := cbor.DecOptions{
		MaxNestedLevels:  maxNestedLevels,
		MaxArrayElements: maxArrayElements,
		MaxMapPairs:      maxMapPairs,
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthAllowed,
		IntDec:           cbor.IntDecConvertNone,
		DefaultMapType:   nil,
		UTF8:             cbor.UTF8DecodeInvalid,
	}
	if decMode, err = do.DecMode(); err != nil {
		panic(err)
	}
}

// MarshalCBOR encodes the stamped record as the value stored under its key
// (docs/FORMAT.md §3): core deterministic CBOR, so the same record always
// encodes to the same bytes. It is what a writer stores, and the reference
// the store's readers, in Go or any other language, decode.
func (s Stamped[T]) MarshalCBOR() ([]byte, error) {
	if r, ok := any(&s.Record).(*Record); ok {
		return encodeRecord(s.Stamp, r)
	}
	return encMode.Marshal(struct {
		Stamp  Stamp `cbor:"stamp"`
		Record T     `cbor:"record"`
	}{s.Stamp, s.Record})
}

// AppendCBOR appends the encoding MarshalCBOR returns to dst and returns
// the extended buffer, as an [encoding.BinaryAppender] does, so that a
// writer encoding many records into one buffer allocates nothing per
// record. On an error dst is returned as it was.
func (s Stamped[T]) AppendCBOR(dst []byte) ([]byte, error) {
	if r, ok := any(&s.Record).(*Record); ok {
		b, err := appendRecord(dst, s.Stamp, r)
		if err != nil {
			return dst, err
		}
		return b, nil
	}
	v, err := s.MarshalCBOR()
	if err != nil {
		return dst, err
	}
	return append(dst, v...), nil
}

// encodeRecord encodes a stamped record by hand (appendRecord), to the
// bytes the library writes for its recordWire.
func encodeRecord(st Stamp, r *Record) ([]byte, error) {
	bp := encodeBufs.Get().(*[]byte)
	b, err := appendRecord((*bp)[:0], st, r)
	var v []byte
	if err == nil {
		v = append(make([]byte, 0, len(b)), b...)
	}
	if cap(b) <= maxPooledBuf {
		*bp = b
		encodeBufs.Put(bp)
	}
	return v, err
}

// encodeBufs recycles the buffers records are encoded into, so that a
// record costs one allocation, of its own size: the value returned.
var encodeBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf is the largest buffer encodeBufs keeps: a rare large
// record should not pin its buffer for the life of the process.
const maxPooledBuf = 64 << 10

// decodeRecord decodes a stored record value: by hand when it is in the
// form writers give it (decodeByHand), through the library otherwise.
func decodeRecord(b []byte) (Stamped[Record], error) {
	var v Stamped[Record]
	if len(b) > maxValueSize {
		return v, fmt.Errorf("value of %d bytes exceeds %d", len(b), maxValueSize)
	}
	if decodeByHand(b, &v) {
		return v, nil
	}
	return decodeRecordLibrary(b)
}

// decodeRecordLibrary decodes a stored record value through the library,
// within the decoding budget: the reference decodeByHand agrees with, and
// the decoder of what it leaves.
func decodeRecordLibrary(b []byte) (Stamped[Record], error) {
	var v Stamped[Record]
	if err := cw.CheckBudget(b); err != nil {
		return v, err
	}
	var w recordWire
	if err := decMode.Unmarshal(b, &w); err != nil {
		return v, err
	}
	v.Stamp = w.Stamp
	err := w.Record.toRecord(&v.Record)
	return v, err
}

// recordWire is Stamped[Record] as it is stored (docs/FORMAT.md, 3.2),
// with every attribute set a plain map of plain values: the reference
// the hand-written encoder (appendRecord) must match to the byte, and
// what a value decodes through. Record, Attrs and Value encode to the
// same bytes through their CBOR methods, but the library calls a method
// per attribute set and per value; through this struct it decodes a
// record in one pass. Its tags are the format: keep the struct, Record
// and appendRecord in step.
type recordWire struct {
	Stamp  Stamp    `cbor:"stamp"`
	Record bodyWire `cbor:"record"`
}

// bodyWire is Record as it is stored; keep the two in step.
type bodyWire struct {
	Name         string         `cbor:"name"`
	Wall         time.Duration  `cbor:"wall_ns"`
	Attributes   map[string]any `cbor:"attrs,omitzero"`
	Status       Status         `cbor:"status,omitzero"`
	Events       []eventWire    `cbor:"events,omitempty"`
	TraceID      TraceID        `cbor:"trace_id,omitzero"`
	SpanID       SpanID         `cbor:"span_id,omitzero"`
	ParentSpanID SpanID         `cbor:"parent_span_id,omitzero"`
	Scope        Scope          `cbor:"scope,omitzero"`

	SpanKind          string     `cbor:"span_kind,omitempty"`
	TraceState        string     `cbor:"trace_state,omitempty"`
	Links             []linkWire `cbor:"links,omitempty"`
	DroppedAttributes int        `cbor:"dropped_attrs,omitempty"`
	DroppedEvents     int        `cbor:"dropped_events,omitempty"`
	DroppedLinks      int        `cbor:"dropped_links,omitempty"`
	Effect            string     `cbor:"effect,omitempty"` // "" for Observed, as Record's omitzero leaves it out
	Inputs            []string   `cbor:"inputs,omitzero"`  // [] kept: none of attrs is an input
}

// linkWire is Link as it is stored.
type linkWire struct {
	TraceID    TraceID        `cbor:"trace_id,omitzero"`
	SpanID     SpanID         `cbor:"span_id,omitzero"`
	TraceState string         `cbor:"trace_state,omitempty"`
	Attributes map[string]any `cbor:"attrs,omitzero"`
}

// eventWire is Event as it is stored.
type eventWire struct {
	Name       string         `cbor:"name"`
	Offset     time.Duration  `cbor:"offset_ns"`
	Attributes map[string]any `cbor:"attrs,omitzero"`
}

func (w *bodyWire) toRecord(r *Record) error {
	*r = Record{
		Name:         w.Name,
		Wall:         w.Wall,
		Status:       w.Status,
		TraceID:      w.TraceID,
		SpanID:       w.SpanID,
		ParentSpanID: w.ParentSpanID,
		Scope:        w.Scope,

		SpanKind:          w.SpanKind,
		TraceState:        w.TraceState,
		DroppedAttributes: w.DroppedAttributes,
		DroppedEvents:     w.DroppedEvents,
		DroppedLinks:      w.DroppedLinks,
		Effect:            effectOf(w.Effect),
		Inputs:            w.Inputs,
	}
	var err error
	if r.Attributes, err = attrsOf(w.Attributes); err != nil {
		return err
	}
	if w.Events != nil { // an empty array reads as an empty slice, as it did
		r.Events = make([]Event, len(w.Events))
		for i, e := range w.Events {
			r.Events[i] = Event{Name: e.Name, Offset: e.Offset}
			if r.Events[i].Attributes, err = attrsOf(e.Attributes); err != nil {
				return fmt.Errorf("event %d: %w", i, err)
			}
		}
	}
	if w.Links != nil {
		r.Links = make([]Link, len(w.Links))
		for i, l := range w.Links {
			r.Links[i] = Link{TraceID: l.TraceID, SpanID: l.SpanID, TraceState: l.TraceState}
			if r.Links[i].Attributes, err = attrsOf(l.Attributes); err != nil {
				return fmt.Errorf("link %d: %w", i, err)
			}
		}
	}
	return nil
}

// MarshalCBOR encodes the session as the row stored under its key
// (docs/FORMAT.md §3), in core deterministic CBOR.
func (s Session) MarshalCBOR() ([]byte, error) { return encMode.Marshal(sessionRow(s)) }

// sessionRow is Session without its methods, so that encoding it does not
// call MarshalCBOR again.
type sessionRow Session

// decodeSession decodes a stored session row.
func decodeSession(b []byte) (Session, error) {
	var s Session
	if len(b) > maxValueSize {
		return s, fmt.Errorf("value of %d bytes exceeds %d", len(b), maxValueSize)
	}
	if err := cw.CheckBudget(b); err != nil {
		return s, err
	}
	err := decMode.Unmarshal(b, &s)
	return s, err
}
