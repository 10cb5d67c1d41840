// Package api holds the JSON the records command prints with --json, one
// type per shape of docs/FORMAT.md §8, each made from the library's values
// (NewSession, NewRecord, ...), so that every command prints a session, a
// record or a summary the same way, and a web view of a store can serve
// the same objects. Fields are part of the documented output: new ones
// are added, none renamed. Every field is always present, empty values as
// "", {} or [] rather than missing or null, except where a field's
// meaning says when it is null; session ids are strings (a JavaScript
// number does not hold them exactly).
//
// The text for people is package render's.
package api

import (
	"encoding/json"
	"io"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// NewEncoder returns an encoder writing one JSON value per line (JSON
// Lines). encoding/json replaces bytes that are not UTF-8, so every line
// is valid JSON whatever the store holds; <, > and & are written as they
// are.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// Session is a session row with its records counted per kind: what
// records sessions --json and records prune --json print (FORMAT.md §8.1).
type Session struct {
	ID                 sessions.SessionID `json:"id,string"`
	StartedUnixMs      int64              `json:"started_unix_ms"`
	Label              string             `json:"label"`
	Process            int                `json:"process"`
	OS                 string             `json:"os"`
	Arch               string             `json:"arch"`
	ServiceVersion     string             `json:"service_version"`
	OtelrecordsVersion string             `json:"otelrecords_version"`
	Resource           sessions.Attrs     `json:"resource"`
	Records            map[string]int     `json:"records"`
}

// NewSession returns a session row with its record counts per kind; never
// a null object.
func NewSession(s sessions.Session, counts map[string]int) Session {
	if counts == nil {
		counts = map[string]int{}
	}
	return Session{
		ID:                 s.ID,
		StartedUnixMs:      s.StartedUnixMs,
		Label:              s.Label,
		Process:            s.Process,
		OS:                 s.OS,
		Arch:               s.Arch,
		ServiceVersion:     explain.ServiceVersion(s),
		OtelrecordsVersion: s.Version,
		Resource:           s.Resource,
		Records:            counts,
	}
}

// Record is a record as records dump --json (and show, watch) print it
// (FORMAT.md §8.2).
type Record struct {
	Kind         string             `json:"kind"`
	Session      sessions.SessionID `json:"session,string"`
	Seq          uint64             `json:"seq"`
	OffsetNs     int64              `json:"offset_ns"`
	Name         string             `json:"name"`
	WallNs       int64              `json:"wall_ns"`
	Attributes   sessions.Attrs     `json:"attributes"`
	Status       Status             `json:"status"`
	Events       []Event            `json:"events"`
	TraceID      sessions.TraceID   `json:"trace_id"`
	SpanID       sessions.SpanID    `json:"span_id"`
	ParentSpanID sessions.SpanID    `json:"parent_span_id"`
	Scope        Scope              `json:"scope"`
	SpanKind     string             `json:"span_kind"`
	Links        []Link             `json:"links"`
	Effect       *string            `json:"effect"`
}

// Link is one of a span's links.
type Link struct {
	TraceID    sessions.TraceID `json:"trace_id"`
	SpanID     sessions.SpanID  `json:"span_id"`
	Attributes sessions.Attrs   `json:"attributes"`
}

// Status is a span's status; the code is "unset" when none was stored.
type Status struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// Event is one of a span's events.
type Event struct {
	Name       string         `json:"name"`
	OffsetNs   int64          `json:"offset_ns"`
	Attributes sessions.Attrs `json:"attributes"`
}

// Scope is the instrumentation scope that made the span.
type Scope struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// NewRecord returns the record: every field present, empty ones as "", {}
// or [] rather than missing or null.
func NewRecord(kr sessions.KindRecord) Record {
	rec := kr.Record
	code := rec.Status.Code
	if code == "" {
		code = "unset" // a span whose status was never set stores none
	}
	events := make([]Event, len(rec.Events))
	for i, e := range rec.Events {
		events[i] = Event{Name: e.Name, OffsetNs: int64(e.Offset), Attributes: e.Attributes}
	}
	links := make([]Link, len(rec.Links))
	for i, l := range rec.Links {
		links[i] = Link{TraceID: l.TraceID, SpanID: l.SpanID, Attributes: l.Attributes}
	}
	kind := rec.SpanKind
	if kind == "" {
		kind = "unspecified" // a record not made from a span, or from before records kept kinds
	}
	return Record{
		Kind:         kr.Kind,
		Session:      kr.Stamp.Session,
		Seq:          kr.Stamp.Seq,
		OffsetNs:     int64(kr.Stamp.Offset),
		Name:         rec.Name,
		WallNs:       int64(rec.Wall),
		Attributes:   rec.Attributes,
		Status:       Status{Code: code, Description: rec.Status.Description},
		Events:       events,
		TraceID:      rec.TraceID,
		SpanID:       rec.SpanID,
		ParentSpanID: rec.ParentSpanID,
		Scope:        Scope{Name: rec.Scope.Name, Version: rec.Scope.Version},
		SpanKind:     kind,
		Links:        links,
		Effect:       Effect(&rec),
	}
}

// Effect returns the record's effect as the JSON views print it,
// "changed" or "observed", or nil (null) for a record that does not say:
// one written before records kept their effect, which reads as observed
// whatever it did (explain.StoredBody).
func Effect(rec *sessions.Record) *string {
	effect, known := explain.StoredBody.Effect(rec)
	if !known {
		return nil
	}
	s := effect.String()
	return &s
}

// Verdict returns what a record did, "changed", "missed" or "hit", or nil
// (null) for a record that does not say.
func Verdict(v explain.Verdict) *string {
	if v == explain.Unknown {
		return nil
	}
	s := v.String()
	return &s
}

// Compact is what records compact --json prints.
type Compact struct {
	Before int64 `json:"before_bytes"`
	After  int64 `json:"after_bytes"`
	Freed  int64 `json:"freed_bytes"`
}
