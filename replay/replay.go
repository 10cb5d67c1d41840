package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// Batch limits: a batch is exported when it holds DefaultBatchSpans spans
// or about DefaultBatchBytes bytes of record, whichever comes first. The
// count is the SDK's BatchSpanProcessor default; the bytes keep a batch of
// heavy records (kernel sources at level full) well under the 4 MiB that a
// gRPC receiver (the Collector's, Jaeger's) accepts by default.
const (
	DefaultBatchSpans = 512
	DefaultBatchBytes = 1 << 20
)

// Progress is how far a replay got; Options.Progress receives it after
// every batch.
type Progress struct {
	// Sessions is how many sessions have been started, of Total (the
	// sessions with a row; records without one add to Sessions only).
	Sessions, Total int
	// Spans is how many spans of records the exporter accepted.
	Spans int
	// Repaired is how many records held strings that are not UTF-8, which
	// OTLP cannot carry: they were sent with each run of invalid bytes
	// replaced by U+FFFD (spanbridge.RepairUTF8).
	Repaired int
	// FirstRepaired holds the stamps of the first min(Repaired,
	// MaxFirstRepaired) of them, so a message can name them. (An array,
	// so that Progress stays comparable.)
	FirstRepaired [MaxFirstRepaired]sessions.Stamp
	// RepairedSessions is how many session rows (label, Resource) were
	// repaired likewise.
	RepairedSessions int
	// Tallies is how many parts of sessions' tallies (counts of what a
	// kept session let go) the exporter accepted, each a span
	// (spanbridge.TallySpan) after its session's records; Spans does not
	// count them.
	Tallies int
}

// MaxFirstRepaired is how many repaired records Progress names.
const MaxFirstRepaired = 5

// Options narrow a replay and report on it. The zero Options replays every
// session, silently.
type Options struct {
	// Sessions, when not empty, are the only sessions replayed.
	Sessions []sessions.SessionID
	// Service, when not empty, replaces every session's service.name: a
	// fleet sending to one backend can tell replayed sessions from live
	// ones, or keep two replays of one store apart.
	Service string
	// Progress, when not nil, is called after every batch the exporter
	// accepts, on the goroutine that called Replay.
	Progress func(Progress)
	// Skip, when not nil, is asked about every record before it is sent,
	// in stamp order, and the records it returns true for are not: a
	// caller that remembers what it sent (records replay --cursor) sends
	// the rest. A session all of whose records are skipped is not counted
	// in Progress.Sessions.
	Skip func(sessions.Stamp) bool
}

// ErrNoSession is returned (wrapped) when Options.Sessions names a session
// the store has no record of.
var ErrNoSession = errors.New("no such session in the store")

// Replay reads the records of the store in stamp order and exports them
// through exp as spans (see spanbridge.Span), one Resource per session
// (see spanbridge.Resource), in batches. It returns how far it got, which on error is how
// much the exporter accepted before it failed. It does not shut exp down.
//
// After a session's records come the parts of its tally (what it let
// go, counted: tallies.Tally), each a span (spanbridge.TallySpan), for
// a session any of whose records was sent; Progress.Tallies counts them.
//
// Records whose session row is gone (a process whose session another
// process pruned while it ran) are replayed too, under a Resource that
// only carries their session's id. Strings that are not UTF-8, which a
// store keeps as given and OTLP cannot carry, are sent repaired
// (spanbridge.RepairUTF8) and counted in Progress.
func Replay(ctx context.Context, r *sessions.Records, exp sdktrace.SpanExporter, o Options) (Progress, error) {
	ids := slices.Compact(slices.Sorted(slices.Values(o.Sessions)))
	rows := map[sessions.SessionID]sessions.Session{}
	var p Progress
	for s, err := range r.Sessions() {
		if err != nil {
			return p, err
		}
		if len(ids) == 0 || slices.Contains(ids, s.ID) {
			rows[s.ID] = s
		}
	}
	p.Total = len(rows)
	kinds, err := r.Kinds()
	if err != nil {
		return p, err
	}

	b := batcher{ctx: ctx, exp: exp, progress: o.Progress, p: &p}
	var (
		current sessions.SessionID
		res     *resource.Resource
		started bool
	)
	// The tally of the session whose records were sent goes after them,
	// under the same Resource.
	finish := func() error {
		if !started {
			return nil
		}
		started = false
		return b.tallies(r, current, res)
	}
	replayRange := func(opts ...sessions.ReadOption) (bool, error) {
		found := false
		for kr, err := range r.InStampOrder(kinds, opts...) {
			if err != nil {
				return found, err
			}
			found = true
			if o.Skip != nil && o.Skip(kr.Stamp) {
				continue
			}
			if !started || kr.Stamp.Session != current {
				if err := finish(); err != nil {
					return found, err
				}
				started, current = true, kr.Stamp.Session
				s, ok := rows[current]
				if o.Service != "" {
					s.Resource = withService(s.Resource, o.Service)
				}
				if spanbridge.RepairSessionUTF8(&s) {
					p.RepairedSessions++
				}
				if ok {
					res = spanbridge.Resource(s)
				} else {
					s.ID = current
					res = spanbridge.OrphanResource(s)
				}
				p.Sessions++
			}
			kind, rec := kr.Kind, kr.Stamped
			if repairUTF8(&kind, &rec.Record) {
				if p.Repaired < MaxFirstRepaired {
					p.FirstRepaired[p.Repaired] = rec.Stamp
				}
				p.Repaired++
			}
			if err := b.add(spanbridge.Span(res, kind, rec), size(rec.Record)); err != nil {
				return found, err
			}
		}
		return found, finish()
	}

	if len(ids) == 0 {
		if _, err := replayRange(); err != nil {
			return p, err
		}
	}
	for _, id := range ids {
		found, err := replayRange(sessions.InSession(id))
		if err != nil {
			return p, err
		}
		if _, row := rows[id]; !found && !row {
			return p, fmt.Errorf("session %d: %w", id, ErrNoSession)
		}
	}
	return p, b.flush()
}

// repairUTF8 repairs a record and its kind for OTLP (spanbridge.RepairUTF8),
// and reports whether it changed anything.
func repairUTF8(kind *string, rec *sessions.Record) bool {
	changed := spanbridge.RepairUTF8(rec)
	if !utf8.ValidString(*kind) {
		*kind, changed = strings.ToValidUTF8(*kind, spanbridge.Replacement), true
	}
	return changed
}

func withService(attrs sessions.Attrs, service string) sessions.Attrs {
	out := slices.DeleteFunc(slices.Clone(attrs), func(kv sessions.Attr) bool { return kv.Key == "service.name" })
	return append(out, sessions.Attr{Key: "service.name", Value: sessions.StringValue(service)})
}

// batcher gathers spans and exports them in batches.
type batcher struct {
	ctx      context.Context
	exp      sdktrace.SpanExporter
	progress func(Progress)
	p        *Progress

	spans    []sdktrace.ReadOnlySpan
	bytes    int
	nTallies int // of spans, the tallies'
}

func (b *batcher) add(s sdktrace.ReadOnlySpan, n int) error {
	if len(b.spans) > 0 && b.bytes+n > DefaultBatchBytes {
		if err := b.flush(); err != nil {
			return err
		}
	}
	b.spans = append(b.spans, s)
	b.bytes += n
	if len(b.spans) >= DefaultBatchSpans {
		return b.flush()
	}
	return nil
}

// tallies adds the parts of session id's tally the store holds, as
// spans under res.
func (b *batcher) tallies(r *sessions.Records, id sessions.SessionID, res *resource.Resource) error {
	for t, err := range tallies.Parts(r, id) {
		if err != nil {
			return err
		}
		s, err := spanbridge.TallySpan(res, t)
		if err != nil {
			return err
		}
		if err := b.add(s, 64+len(s.Attributes()[0].Value.AsString())); err != nil {
			return err
		}
		b.nTallies++
	}
	return nil
}

func (b *batcher) flush() error {
	if len(b.spans) == 0 {
		return nil
	}
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if err := b.exp.ExportSpans(b.ctx, b.spans); err != nil {
		return err
	}
	b.p.Spans += len(b.spans) - b.nTallies
	b.p.Tallies += b.nTallies
	clear(b.spans) // let the exported spans go
	b.spans, b.bytes, b.nTallies = b.spans[:0], 0, 0
	if b.progress != nil {
		b.progress(*b.p)
	}
	return nil
}

// size estimates how many bytes a record makes in an export request: its
// strings, 8 bytes a number, and a fixed part for ids, times and framing.
// It only has to keep batches well under a receiver's limit.
func size(r sessions.Record) int {
	n := 64 + len(r.Name) + len(r.Scope.Name) + len(r.Scope.Version) + len(r.Status.Description) + attrsSize(r.Attributes)
	for _, e := range r.Events {
		n += 16 + len(e.Name) + attrsSize(e.Attributes)
	}
	return n
}

func attrsSize(a sessions.Attrs) int {
	n := 0
	for _, kv := range a {
		n += 4 + len(kv.Key)
		switch x := kv.Value.Any().(type) {
		case string:
			n += len(x)
		case []string:
			for _, s := range x {
				n += 2 + len(s)
			}
		case []bool:
			n += len(x)
		case []int64:
			n += 8 * len(x)
		case []float64:
			n += 8 * len(x)
		default:
			n += 8
		}
	}
	return n
}
