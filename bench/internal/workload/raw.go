package workload

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Encode returns the key and value a kept session stores for the ended span
// s at stamp: the record the library's own mapping makes of it
// (spanbridge.Map at level basic, every attribute an input, as they are
// when a span is started with its attributes) and its CBOR encoding by the
// library's encoder. The raw-Badger references write these, so they write
// the same bytes as the exporter, not a stand-in value that compresses
// better.
func Encode(s sdktrace.ReadOnlySpan, stamp sessions.Stamp) (key, value []byte, err error) {
	m := spanbridge.Map(s, sessions.LevelBasic, len(s.Attributes()))
	value, err = sessions.Stamped[sessions.Record]{Stamp: stamp, Record: m.Record}.MarshalCBOR()
	if err != nil {
		return nil, nil, err
	}
	return keys.Record(m.Kind, uint64(stamp.Session), stamp.Seq), value, nil
}

// RawBadger is a SpanExporter that persists every span it is handed into a
// Badger database, with nothing of the exporter around it: each span is
// encoded with Encode, stamped in one session in the order spans arrive,
// and each batch is one WriteBatch, flushed before ExportSpans returns.
// Behind a BatchSpanProcessor it is the lower bound of what persisting
// every span costs with Badger: the figures set our exporter beside it.
type RawBadger struct {
	db      *badger.DB
	session sessions.SessionID
	start   time.Time
	seq     atomic.Uint64
}

// NewRawBadger returns a RawBadger writing into db, which it closes at
// Shutdown.
func NewRawBadger(db *badger.DB) *RawBadger {
	now := time.Now()
	return &RawBadger{db: db, session: sessions.SessionID(now.UnixNano()), start: now}
}

// ExportSpans writes one record per span, in one WriteBatch.
func (r *RawBadger) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	wb := r.db.NewWriteBatch()
	defer wb.Cancel()
	for _, s := range spans {
		stamp := sessions.Stamp{Session: r.session, Seq: r.seq.Add(1) - 1, Offset: s.StartTime().Sub(r.start)}
		k, v, err := Encode(s, stamp)
		if err != nil {
			return err
		}
		if err := wb.Set(k, v); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// Written returns how many records were handed to Badger.
func (r *RawBadger) Written() uint64 { return r.seq.Load() }

// Shutdown closes the database.
func (r *RawBadger) Shutdown(context.Context) error { return r.db.Close() }
