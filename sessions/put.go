package sessions

import (
	"fmt"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// Put writes session rows and records into the store as they are: each
// row under its id, each record under its kind and stamp (session, seq),
// replacing whatever the store holds under the same key. It is how a
// store is rebuilt from records read elsewhere (sessions pulled back from
// a tracing backend by `records pull`, say) with the ids and seqs they
// had: it stamps nothing and applies no retention rule, which a program
// recording gets from the exporter.
//
// Rows and records are encoded as a writer encodes them and written in one
// Store.Write, rows first, as a writer keeps a session. Nothing is written
// when a record's kind is one no store holds (keys.CheckKind, in canonical
// form; the error wraps ErrInvalidKind), or a row or record is one no
// store takes (the error wraps ErrTooLarge): larger than a writer writes
// (1 MiB for a row, 15 MiB for a record with its key), or than a reader
// decodes (more attributes, events or array elements than its limits, or
// past its decoding budget: docs/FORMAT.md, "Decode limits"), which a
// reader would skip. The error says which. Each row and record is decoded
// back as a reader decodes it to tell: Put costs a decode of each value
// besides its encoding. Put is as durable as Store.Write: on error,
// putting the same again is harmless.
func (r *Records) Put(rows []Session, records []KindRecord) error {
	entries := make([]Entry, 0, len(rows)+len(records))
	for _, s := range rows {
		v, err := s.MarshalCBOR()
		if err != nil {
			return fmt.Errorf("otelrecords: session %d: %w", s.ID, err)
		}
		if len(v) > keys.MaxSessionRow {
			return fmt.Errorf("otelrecords: session %d: %w: a row of %d bytes, over the %d a writer writes", s.ID, ErrTooLarge, len(v), keys.MaxSessionRow)
		}
		if _, err := decodeSession(v); err != nil {
			return fmt.Errorf("otelrecords: session %d: %w: a reader would not decode its row: %v", s.ID, ErrTooLarge, err)
		}
		entries = append(entries, Entry{Key: keys.Session(uint64(s.ID)), Value: v})
	}
	var buf []byte // one buffer for every value, cut into entries
	for _, kr := range records {
		if k, err := keys.CheckKind(kr.Kind); err != nil || k != kr.Kind {
			return fmt.Errorf("otelrecords: session %d seq %d: kind %q: %w", kr.Stamp.Session, kr.Stamp.Seq, kr.Kind, ErrInvalidKind)
		}
		start := len(buf)
		var err error
		if buf, err = kr.Stamped.AppendCBOR(buf); err != nil {
			return fmt.Errorf("otelrecords: session %d seq %d: %w", kr.Stamp.Session, kr.Stamp.Seq, err)
		}
		key := keys.Record(kr.Kind, uint64(kr.Stamp.Session), kr.Stamp.Seq)
		if n := len(key) + len(buf) - start; n > keys.MaxRecordSize {
			return fmt.Errorf("otelrecords: session %d seq %d: %w: a record of %d bytes, over the %d a writer writes", kr.Stamp.Session, kr.Stamp.Seq, ErrTooLarge, n, keys.MaxRecordSize)
		}
		if _, err := decodeRecord(buf[start:]); err != nil {
			return fmt.Errorf("otelrecords: session %d seq %d: %w: a reader would not decode it: %v", kr.Stamp.Session, kr.Stamp.Seq, ErrTooLarge, err)
		}
		entries = append(entries, Entry{Key: key, Value: buf[start:len(buf):len(buf)]})
	}
	return r.store.Write(entries)
}
