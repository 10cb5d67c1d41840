package unencoded

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Fill gives a value to its owner's records queued unencoded, and to
// nothing else: not to another owner's, not to a record of another
// session with the same seq, not to an entry whose value is encoded.
func TestFillEncodesOnlyItsOwnersRecords(t *testing.T) {
	type span struct{ name string }
	spans := []span{{"a"}, {"b"}, {"c"}}
	var im Imports[string, span]
	im.Begin()
	im.Add("mine", sessions.Stamp{Session: 7, Seq: 1}, &spans[0])
	im.Add("theirs", sessions.Stamp{Session: 8, Seq: 2}, &spans[1])
	im.Add("mine", sessions.Stamp{Session: 7, Seq: 3}, &spans[2])
	r := im.End()
	entry := func(session, seq uint64, v []byte) sessions.Entry {
		return sessions.Entry{Key: keys.AppendRecord(nil, "step", session, seq), Value: v}
	}
	queue := []sessions.Entry{
		entry(7, 1, Value),              // mine: filled
		entry(8, 2, Value),              // another owner's: left
		entry(9, 3, Value),              // seq 3 of another session: left
		entry(7, 3, Value),              // mine: filled
		entry(7, 4, []byte{0xa2, 1, 2}), // encoded already: left
	}
	var reported []error
	fill := im.Fill("mine", func(s *span, st sessions.Stamp) ([]byte, error) {
		return fmt.Appendf(nil, "%s@%d/%d", s.name, st.Session, st.Seq), nil
	}, func(err error) { reported = append(reported, err) })
	for i := range queue {
		fill(&queue[i])
	}
	want := [][]byte{[]byte("a@7/1"), Value, Value, []byte("c@7/3"), {0xa2, 1, 2}}
	for i, e := range queue {
		if !bytes.Equal(e.Value, want[i]) {
			t.Errorf("entry %d: value %q, want %q", i, e.Value, want[i])
		}
	}
	if len(reported) != 0 {
		t.Errorf("reported %v", reported)
	}
	// An encoding that fails is reported, and the record stays unencoded.
	failing := im.Fill("theirs", func(*span, sessions.Stamp) ([]byte, error) { return nil, errors.New("no") },
		func(err error) { reported = append(reported, err) })
	failing(&queue[1])
	if !Is(queue[1].Value) || len(reported) != 1 {
		t.Errorf("a failed encoding: value %q, %d reports; want it unencoded, one report", queue[1].Value, len(reported))
	}
	im.GiveBack(r)
	if r.Len() != 0 {
		t.Errorf("GiveBack left %d records", r.Len())
	}
	late := entry(7, 1, Value)
	im.Fill("mine", func(*span, sessions.Stamp) ([]byte, error) { return []byte("late"), nil }, nil)(&late)
	if !Is(late.Value) {
		t.Errorf("a record of an Import given back was filled: %q", late.Value)
	}
}
