package explain_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// span is a span a test session records: its kind, name, start and wall
// on the session's clock, and its ids (0 for none; trace 0 is trace 1). A
// span given a trace of its own is a server's request span (span kind
// server) unless internal says it is a program's phase.
type span struct {
	kind, name string
	at, wall   time.Duration
	id, parent uint64
	trace      uint64
	internal   bool
	attrs      sessions.Attrs
	observed   bool   // changed nothing (a cache hit); else changed
	spanKind   string // its span's kind, when given
	// otlp: the span crossed OTLP (through a Collector, or pulled from a
	// backend): its record does not say its inputs, and has a span kind.
	otlp bool
}

// addSessions adds the records of each session to w, in stamp order.
func addSessions(w *explain.Rework, r *sessions.Records, ids ...sessions.SessionID) error {
	for _, id := range ids {
		for kr, err := range explain.InStampOrder(r, id, nil) {
			if err != nil {
				return err
			}
			if err := w.Add(kr); err != nil {
				return err
			}
		}
	}
	return nil
}

// name returns the name of n's record, as the tree holds it.
func name(t *explain.SessionTree, n *explain.Node) string {
	s, ok := t.Name(n)
	if !ok {
		panic(fmt.Sprintf("seq %d: name not held", n.Seq))
	}
	return s
}

// epoch is when every test session starts.
var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// record writes one session of spans, started at epoch, into store.
func record(store sessions.Store, spans []span) sessions.SessionID {
	return recordAt(store, epoch, spans)
}

// recordAt writes one session of spans, started at start, into store,
// stamped in the order given (so seq i is spans[i]), and returns the
// session's id.
//
// It is the one place these tests and examples write records, through
// the Recorder as the exporter does.
func recordAt(store sessions.Store, start time.Time, spans []span) sessions.SessionID {
	return recordWith(store, start, recorder.Config{}, spans)
}

// recordWith is recordAt with the session's configuration: its label and
// Resource, say. Its level is always basic.
func recordWith(store sessions.Store, start time.Time, cfg recorder.Config, spans []span) sessions.SessionID {
	cfg.Level = sessions.LevelBasic
	rec := recorder.New(cfg,
		func() (sessions.Store, error) { return store, nil }, func() time.Time { return start })
	var id sessions.SessionID
	for _, s := range spans {
		st, ok := rec.Stamp(start.Add(s.at))
		if !ok {
			panic("not stamped")
		}
		id = st.Session
		trace := s.trace
		if trace == 0 {
			trace = 1
		}
		body := sessions.Record{
			Name:         s.name,
			Wall:         s.wall,
			Attributes:   s.attrs,
			TraceID:      traceID(trace),
			SpanID:       spanID(s.id),
			ParentSpanID: spanID(s.parent),
		}
		if s.trace != 0 && !s.internal {
			body.SpanKind = "server"
		}
		if s.spanKind != "" {
			body.SpanKind = s.spanKind
		}
		// Changed, so the session is kept from its first record and none
		// is held back or evicted; an observed record says so, and that
		// none of its attributes is an input, as records from spans do.
		effect := sessions.Changed
		if s.observed {
			effect, body.Inputs = sessions.Observed, []string{}
		}
		body.Effect = effect
		if s.otlp {
			body.Inputs = nil
			if body.SpanKind == "" {
				body.SpanKind = "internal"
			}
		}
		if err := rec.Record(s.kind, effect, st, body); err != nil {
			panic(err)
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		panic(err)
	}
	return id
}

func spanID(n uint64) (id sessions.SpanID) {
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

func traceID(n uint64) (id sessions.TraceID) {
	binary.BigEndian.PutUint64(id[8:], n)
	return id
}

// sliceStore is a Store in a sorted slice, for tests of many kinds:
// sessions.MemStore copies the rest of the store at every scan (a
// snapshot), which makes Records.Kinds quadratic in the number of kinds.
// It also counts what reads cost: scans begun and entries yielded.
type sliceStore struct {
	entries        []sessions.Entry
	scans, yielded int
	failAfter      int // if > 0, scans fail once this many entries were yielded
}

func (s *sliceStore) Write(entries []sessions.Entry) error {
	for _, e := range entries {
		s.entries = append(s.entries, sessions.Entry{Key: bytes.Clone(e.Key), Value: bytes.Clone(e.Value)})
	}
	slices.SortStableFunc(s.entries, func(a, b sessions.Entry) int { return bytes.Compare(a.Key, b.Key) })
	// The last write of a key wins.
	out := s.entries[:0]
	for i, e := range s.entries {
		if i+1 < len(s.entries) && bytes.Equal(e.Key, s.entries[i+1].Key) {
			continue
		}
		out = append(out, e)
	}
	s.entries = out
	return nil
}

func (s *sliceStore) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		s.scans++
		i, _ := slices.BinarySearchFunc(s.entries, start, func(e sessions.Entry, k []byte) int { return bytes.Compare(e.Key, k) })
		for ; i < len(s.entries) && (end == nil || bytes.Compare(s.entries[i].Key, end) < 0); i++ {
			if s.failAfter > 0 && s.yielded >= s.failAfter {
				yield(sessions.Entry{}, errors.New("disk on fire"))
				return
			}
			s.yielded++
			if !yield(s.entries[i], nil) {
				return
			}
		}
	}
}

func (s *sliceStore) DeleteRange(start, end []byte, match func([]byte) bool) (int, error) {
	return 0, errors.New("sliceStore: read-only")
}

func (s *sliceStore) Close() error { return nil }

// deep returns n spans, each inside the one before.
func deep(n int) []span {
	spans := make([]span, n)
	for i := range spans {
		spans[i] = span{kind: "marks", name: "level", at: time.Duration(i), wall: time.Duration(2*(n-i) - 1), id: uint64(i + 1), parent: uint64(i)}
	}
	return spans
}

// manyKinds returns n roots, each of a kind of its own.
func manyKinds(n int) []span {
	spans := make([]span, n)
	for i := range spans {
		spans[i] = span{kind: fmt.Sprintf("k%06d", i), name: "one", at: time.Duration(i), wall: 1, id: uint64(i + 1)}
	}
	return spans
}

// flat returns n roots of one kind.
func flat(n int) []span {
	spans := make([]span, n)
	for i := range spans {
		spans[i] = span{kind: "request", name: "r", at: time.Duration(i), wall: 3, id: uint64(i + 1)}
	}
	return spans
}
