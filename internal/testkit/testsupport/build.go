// Building stores for tests: sessions written through the real Recorder
// on a fixed clock, and single entries encoded as a writer encodes them.
// It is the one way the project's tests build a store, so a change to the
// key layout or the record body is made in the writer alone and every test
// follows.

package testsupport

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// Session is a session being written by Write.
type Session struct {
	t   testing.TB
	rec *recorder.Recorder
}

// Write records one session, started at start, into the store open
// returns (called once, when the session is kept), with cfg (the zero
// Level means LevelBasic), then closes the recorder, which closes the
// store. body records the session's records through s.
func Write(t testing.TB, open func() (sessions.Store, error), start time.Time, cfg recorder.Config, body func(s *Session)) {
	t.Helper()
	if cfg.Level == sessions.LevelOff {
		cfg.Level = sessions.LevelBasic
	}
	s := &Session{t: t, rec: recorder.New(cfg, open, func() time.Time { return start })}
	body(s)
	if err := s.rec.Close(context.Background()); err != nil {
		t.Fatalf("close recorder: %v", err)
	}
}

// Recorder returns the recorder writing the session.
func (s *Session) Recorder() *recorder.Recorder { return s.rec }

// Stamp stamps a record starting at at.
func (s *Session) Stamp(at time.Time) sessions.Stamp {
	s.t.Helper()
	st, ok := s.rec.Stamp(at)
	if !ok {
		s.t.Fatal("Stamp: not stamped")
	}
	return st
}

// Put records a record of kind with the stamp st.
func (s *Session) Put(kind string, e sessions.Effect, st sessions.Stamp, body sessions.Record) {
	s.t.Helper()
	if err := s.rec.Record(kind, e, st, body); err != nil {
		s.t.Fatalf("Record(%s): %v", kind, err)
	}
}

// NoClose wraps a store so that the recorders writing through it in turn
// leave it open.
type NoClose struct{ sessions.Store }

// Close does nothing.
func (NoClose) Close() error { return nil }

// RecordKey returns the key of a record of kind stamped st.
func RecordKey(kind string, st sessions.Stamp) []byte {
	return keys.Record(kind, uint64(st.Session), st.Seq)
}

// SessionKey returns the key of the session row of id.
func SessionKey(id sessions.SessionID) []byte { return keys.Session(uint64(id)) }

// RecordEntry returns a record as a writer stores it.
func RecordEntry(t testing.TB, kind string, st sessions.Stamp, body sessions.Record) sessions.Entry {
	t.Helper()
	v, err := sessions.Stamped[sessions.Record]{Stamp: st, Record: body}.MarshalCBOR()
	if err != nil {
		t.Fatalf("encode %s record: %v", kind, err)
	}
	return sessions.Entry{Key: RecordKey(kind, st), Value: v}
}

// SessionEntry returns a session row as a writer stores it.
func SessionEntry(t testing.TB, s sessions.Session) sessions.Entry {
	t.Helper()
	v, err := s.MarshalCBOR()
	if err != nil {
		t.Fatalf("encode session row: %v", err)
	}
	return sessions.Entry{Key: SessionKey(s.ID), Value: v}
}

// Names returns the names of every record of kind in s, in stamp order.
func Names(t testing.TB, s sessions.Store, kind string) []string {
	t.Helper()
	var out []string
	for r, err := range sessions.NewRecords(s).All(kind) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Record.Name)
	}
	return out
}

// SessionIDs returns the ids of every session row in s, oldest first.
func SessionIDs(t testing.TB, s sessions.Store) []sessions.SessionID {
	t.Helper()
	var out []sessions.SessionID
	for _, r := range SessionRows(t, s) {
		out = append(out, r.ID)
	}
	return out
}

// SessionRows returns every session row in s, oldest first.
func SessionRows(t testing.TB, s sessions.Store) []sessions.Session {
	t.Helper()
	var out []sessions.Session
	for r, err := range sessions.NewRecords(s).Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// OpStore wraps a MemStore and logs each operation, so tests can check the
// order of the keep (prune, then row, then held records, then the change)
// and how much a prune touches.
type OpStore struct {
	*sessions.MemStore
	mu         sync.Mutex
	Ops        []string // what was written and deleted, in order
	Touched    int      // entries scanned or deleted
	FailWrites int      // fail the next n writes
}

// NewOpStore returns an empty OpStore.
func NewOpStore() *OpStore { return &OpStore{MemStore: sessions.NewMemStore()} }

func (s *OpStore) log(op string) {
	s.mu.Lock()
	s.Ops = append(s.Ops, op)
	s.mu.Unlock()
}

// Write logs the operation and passes it on.
func (s *OpStore) Write(es []sessions.Entry) error {
	s.mu.Lock()
	if s.FailWrites > 0 {
		s.FailWrites--
		s.mu.Unlock()
		return errors.New("disk full")
	}
	s.mu.Unlock()
	for _, e := range es {
		kind, _, seq, err := keys.Parse(e.Key)
		if _, _, ok := keys.ParseTally(e.Key); ok {
			s.log("write tally")
		} else if err != nil {
			s.log("write ?")
		} else {
			s.log(fmt.Sprintf("write %s %d", kind, seq))
		}
	}
	return s.MemStore.Write(es)
}

// Scan logs the operation and passes it on.
func (s *OpStore) Scan(start, end []byte) iter.Seq2[sessions.Entry, error] {
	return func(yield func(sessions.Entry, error) bool) {
		for e, err := range s.MemStore.Scan(start, end) {
			s.mu.Lock()
			s.Touched++
			s.mu.Unlock()
			if !yield(e, err) {
				return
			}
		}
	}
}

// DeleteRange logs the operation and passes it on.
func (s *OpStore) DeleteRange(start, end []byte, match func([]byte) bool) (int, error) {
	n, err := s.MemStore.DeleteRange(start, end, match)
	s.mu.Lock()
	s.Touched += n
	s.mu.Unlock()
	if n > 0 {
		s.log(fmt.Sprintf("delete %d", n))
	}
	return n, err
}

// Close does nothing, so that several recorders write through the store
// in turn.
func (s *OpStore) Close() error { return nil }

// OddStarts are span start times a session id cannot hold: before 1970
// (1950's and 1969's shared id 1) and past 2262, where UnixNano overflows
// (year 1000's and 1600's sorted as the newest sessions).
var OddStarts = []time.Time{
	time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(1600, 6, 1, 0, 0, 0, 0, time.UTC),
	time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC),
	time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC),
	time.Date(2262, 4, 12, 0, 0, 0, 0, time.UTC),
	time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
}
