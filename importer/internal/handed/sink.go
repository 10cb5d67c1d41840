package handed

import (
	"bytes"
	"context"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Writer is the store a Sink writes: the Importer's shared writer.
type Writer interface {
	// WriteContext makes entries durable, in the database or its spool,
	// and returns how many went to the spool.
	WriteContext(ctx context.Context, entries []sessions.Entry) (spooled int, err error)
	// Spool sets entries aside for the store's next opener to write.
	Spool(entries []sessions.Entry) error
}

// Sink takes what an Importer's Recorder wrote for the Collector's
// records processor (importer.Config.Forward): it hands them on, then
// writes them — all of them when it keeps records, the Importer's own
// entries among them (Only: importer.Config.ForwardOnly) when it keeps
// none. Handed on first, because what the store holds is taken: written
// first, a crash before they were handed on left them stored, the sender
// (not told) sent them again, and the restarted Importer, finding them
// stored, dropped them — downstream never got them. A crash between the
// two hands them on again when they are sent again: downstream takes a
// span at least once, and once when nothing crashes between. A write that
// fails leaves the batch queued: given again, what was handed on of it is
// not (Head). The Recorder's spool, its last resort for what it could not
// write, goes through the Sink too (Spool): set aside unhanded, it would
// be taken at the next start and never handed on.
//
// One Sink serves one Recorder, which gives it one batch at a time.
type Sink struct {
	W       Writer
	Forward func([]sessions.Entry) error
	Only    bool // keep only the Importer's own entries
	head    Head // handed on, not written
}

// Take hands es on and writes what the Importer keeps of them
// (recorder.Sink).
func (s *Sink) Take(ctx context.Context, es []sessions.Entry) (int, error) {
	return s.take(es, func(keep []sessions.Entry) (int, error) { return s.W.WriteContext(ctx, keep) })
}

// Spool hands es on and sets what the Importer keeps of them aside in the
// store's spool; refused downstream, nothing is set aside.
func (s *Sink) Spool(es []sessions.Entry) error {
	_, err := s.take(es, func(keep []sessions.Entry) (int, error) { return len(keep), s.W.Spool(keep) })
	return err
}

// take hands on what of es was not handed on, then writes what is kept
// of es with write.
func (s *Sink) take(es []sessions.Entry, write func([]sessions.Entry) (int, error)) (int, error) {
	if rest := s.head.Rest(es); len(rest) > 0 {
		if err := s.Forward(rest); err != nil {
			return 0, err
		}
	}
	keep := es
	if s.Only {
		if keep = own(es); len(keep) == 0 {
			s.head.Written()
			return 0, nil
		}
	}
	n, err := write(keep)
	if err != nil {
		s.head.Unwritten(es)
		return n, err
	}
	s.head.Written()
	return n, nil
}

// own returns the Importer's own entries among es.
func own(es []sessions.Entry) []sessions.Entry {
	var out []sessions.Entry
	for _, e := range es {
		if bytes.HasPrefix(e.Key, []byte(keys.ImportRoot)) {
			out = append(out, e)
		}
	}
	return out
}
