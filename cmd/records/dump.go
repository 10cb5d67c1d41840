package main

import (
	"bufio"
	"fmt"
	"iter"
	"strconv"

	"github.com/otelrecords/otelrecords/internal/ground/keys"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/sessions"
)

// dumpFlushEvery is how many text lines the dump aligns at a time: a
// tabwriter holds everything until it is flushed, and a dump can be long.
const dumpFlushEvery = 1024

func (a *app) dumpCommand() *cobra.Command {
	var (
		asJSON  bool
		kind    string
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "dump",
		Short: "Print records in the order they were stamped",
		Long: `Print records in stamp order: by session, oldest first, then by each
record's seq, the order it was stamped in across every kind. Without --kind
every kind is printed, merged into that one order.

Each text line is: session, seq, offset from the session's start, kind,
name (a mark's label), wall time, effect (changed: the record did the work,
observed: it changed nothing, as a cache hit; "-" for records of older
stores, which do not say), and the attributes as key=value.`,
		Example: `  records dump
  records dump --kind autotune
  records dump --session 1735787045006000000 --json
  records dump --json | jq -c 'select(.status.code == "error")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			opts := session.readOptions()
			var kinds []string
			if cmd.Flags().Changed("kind") {
				k, err := keys.CheckKind(kind)
				if err != nil {
					return usageError{fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				if kinds == nil {
					var err error
					if kinds, err = r.Kinds(); err != nil {
						return err
					}
				} else if err := needKind(r, kinds[0]); err != nil {
					return err
				}
				return dump(cmd, inStampOrder(r, kinds, opts...), asJSON)
			})
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "print only records of this `kind` (e.g. marks)")
	session.register(cmd, "print only records of the session with this `id`")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	return cmd
}

// recordJSON is a record as `records dump --json` prints it; its fields are
// part of the documented output (docs/FORMAT.md).
type recordJSON struct {
	Kind         string             `json:"kind"`
	Session      sessions.SessionID `json:"session,string"`
	Seq          uint64             `json:"seq"`
	OffsetNs     int64              `json:"offset_ns"`
	Name         string             `json:"name"`
	WallNs       int64              `json:"wall_ns"`
	Attributes   sessions.Attrs     `json:"attributes"`
	Status       statusJSON         `json:"status"`
	Events       []eventJSON        `json:"events"`
	TraceID      sessions.TraceID   `json:"trace_id"`
	SpanID       sessions.SpanID    `json:"span_id"`
	ParentSpanID sessions.SpanID    `json:"parent_span_id"`
	Scope        scopeJSON          `json:"scope"`
	SpanKind     string             `json:"span_kind"`
	Links        []linkJSON         `json:"links"`
	Effect       *string            `json:"effect"`
}

// linkJSON is one of a span's links.
type linkJSON struct {
	TraceID    sessions.TraceID `json:"trace_id"`
	SpanID     sessions.SpanID  `json:"span_id"`
	Attributes sessions.Attrs   `json:"attributes"`
}

// statusJSON is a span's status; the code is "unset" when none was stored.
type statusJSON struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// eventJSON is one of a span's events.
type eventJSON struct {
	Name       string         `json:"name"`
	OffsetNs   int64          `json:"offset_ns"`
	Attributes sessions.Attrs `json:"attributes"`
}

// scopeJSON is the instrumentation scope that made the span.
type scopeJSON struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// toJSON returns the record as dump --json prints it: every field present,
// empty ones as "", {} or [] rather than missing or null.
func toJSON(kr kindRecord) recordJSON {
	rec := kr.Record
	code := rec.Status.Code
	if code == "" {
		code = "unset" // a span whose status was never set stores none
	}
	events := make([]eventJSON, len(rec.Events))
	for i, e := range rec.Events {
		events[i] = eventJSON{Name: e.Name, OffsetNs: int64(e.Offset), Attributes: e.Attributes}
	}
	links := make([]linkJSON, len(rec.Links))
	for i, l := range rec.Links {
		links[i] = linkJSON{TraceID: l.TraceID, SpanID: l.SpanID, Attributes: l.Attributes}
	}
	kind := rec.SpanKind
	if kind == "" {
		kind = "unspecified" // a record not made from a span, or from before records kept kinds
	}
	return recordJSON{
		Kind:         kr.Kind,
		Session:      kr.Stamp.Session,
		Seq:          kr.Stamp.Seq,
		OffsetNs:     int64(kr.Stamp.Offset),
		Name:         rec.Name,
		WallNs:       int64(rec.Wall),
		Attributes:   rec.Attributes,
		Status:       statusJSON{Code: code, Description: rec.Status.Description},
		Events:       events,
		TraceID:      rec.TraceID,
		SpanID:       rec.SpanID,
		ParentSpanID: rec.ParentSpanID,
		Scope:        scopeJSON{Name: rec.Scope.Name, Version: rec.Scope.Version},
		SpanKind:     kind,
		Links:        links,
		Effect:       effectOf(&rec),
	}
}

// dump prints records, as JSON Lines or as aligned text.
func dump(cmd *cobra.Command, records iter.Seq2[kindRecord, error], asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		for kr, err := range records {
			if err != nil {
				out.Flush() // show what was read before the error
				return err
			}
			if err := enc.Encode(toJSON(kr)); err != nil {
				return err
			}
		}
		return out.Flush()
	}

	t := newTable(out)
	n := 0
	for kr, err := range records {
		if err != nil {
			t.flush() // show what was read before the error
			out.Flush()
			return err
		}
		cells := []string{
			kr.Stamp.Session.String(),
			strconv.FormatUint(kr.Stamp.Seq, 10),
			formatDuration(kr.Stamp.Offset),
			kr.Kind,
			orDash(kr.Record.Name),
			formatDuration(kr.Record.Wall),
			effectCell(&kr.Record),
		}
		if len(kr.Record.Attributes) > 0 {
			cells = append(cells, formatAttrs(kr.Record.Attributes))
		}
		if err := t.row(cells...); err != nil {
			return err
		}
		if n++; n%dumpFlushEvery == 0 {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return out.Flush()
}
