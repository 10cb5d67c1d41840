// Package ahead is the store format of what makes an Importer's
// acknowledgement durable beyond the records themselves (docs/FORMAT.md
// §12): for each kept session a sender entry — whose session it is, where
// it stands — and the spans of a kept session that wait for their
// parents, written ahead in pending entries before the sender is told
// they are stored. The Importer decides what to write and when; this
// package says how it is written and read back.
package ahead

import (
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/klauspost/compress/s2"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// SeqMark is where a session stood at an instant: the seq its next stamp
// would take. A restart reads back the records from the mark a dedup
// window old on, to take each span once.
type SeqMark struct {
	At  int64  `cbor:"at"`
	Seq uint64 `cbor:"seq"`
}

// SenderEntry is the value of a sender entry.
type SenderEntry struct {
	Key         string         `cbor:"key"`
	Start       int64          `cbor:"start"` // the session's start, Unix ns on the gateway's clock
	Skew        int64          `cbor:"skew"`  // the sender's clock's skew, ns
	Seen        int64          `cbor:"seen"`  // when its sender was last heard of, Unix ns
	NextSeq     uint64         `cbor:"next"`
	NextPending uint64         `cbor:"pending"`
	Marks       []SeqMark      `cbor:"marks"`
	Resource    sessions.Attrs `cbor:"resource"`
}

// Chunk is a pending entry's value: the spans (each a Span), and the seq
// their session was at when they were written ahead (a span of them
// recorded since has a seq from there on).
type Chunk struct {
	Seq   uint64            `cbor:"seq"`
	Spans []cbor.RawMessage `cbor:"spans"`
}

// Span is a span written ahead: everything an imported span holds.
type Span struct {
	TraceID    []byte         `cbor:"trace"`
	SpanID     []byte         `cbor:"span"`
	Parent     []byte         `cbor:"parent,omitempty"`
	Remote     bool           `cbor:"remote,omitempty"`
	TraceState string         `cbor:"state,omitempty"`
	Name       string         `cbor:"name"`
	Kind       int            `cbor:"kind,omitempty"`
	Start      [2]int64       `cbor:"start"`
	End        [2]int64       `cbor:"end"`
	Attributes sessions.Attrs `cbor:"attrs,omitempty"`
	Events     []Event        `cbor:"events,omitempty"`
	Links      []Link         `cbor:"links,omitempty"`
	Status     int            `cbor:"status,omitempty"`
	StatusText string         `cbor:"status_text,omitempty"`
	Scope      [3]string      `cbor:"scope"`
	Dropped    [3]int         `cbor:"dropped,omitempty"`
}

// Event is an event of a Span.
type Event struct {
	Name       string         `cbor:"name"`
	Time       [2]int64       `cbor:"time"`
	Attributes sessions.Attrs `cbor:"attrs,omitempty"`
	Dropped    int            `cbor:"dropped,omitempty"`
}

// Link is a link of a Span.
type Link struct {
	TraceID    []byte         `cbor:"trace"`
	SpanID     []byte         `cbor:"span"`
	State      string         `cbor:"state,omitempty"`
	Attributes sessions.Attrs `cbor:"attrs,omitempty"`
	Dropped    int            `cbor:"dropped,omitempty"`
}

// Time is t as a Span holds it: Unix seconds and nanoseconds.
func Time(t time.Time) [2]int64 { return [2]int64{t.Unix(), int64(t.Nanosecond())} }

// FromTime is the time a Span holds as t; the zero time stays zero.
func FromTime(t [2]int64) time.Time {
	if t == Time(time.Time{}) {
		return time.Time{}
	}
	return time.Unix(t[0], t[1])
}

// snappy is the first byte of a pending entry whose CBOR is compressed as
// one Snappy block (a CBOR map, which an entry of one span of an earlier
// version is, begins with 0xa0 to 0xbf).
const snappy = 0x01

// EncodeChunk encodes a pending entry's value: its CBOR compressed, as
// the store's chunks of records are. Spans repeat their attribute names,
// and often their values; and Badger, which sizes the tables it builds
// by their compressed size, holds a table's data uncompressed while it
// builds it: values that compress twentyfold made its compactions hold
// hundreds of megabytes.
func EncodeChunk(c Chunk) ([]byte, error) {
	raw, err := cbor.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1+s2.MaxEncodedLen(len(raw)))
	out[0] = snappy
	return out[:1+len(s2.EncodeSnappy(out[1:], raw))], nil
}

// DecodeChunk decodes a pending entry's value: its spans, each a Span's
// CBOR, and the seq its session was at when they were written. An entry
// of one span, as an earlier version wrote each, is that span, and seq 0:
// when its session was at is not said, so every record of it is read
// back.
func DecodeChunk(b []byte) (spans []cbor.RawMessage, seq uint64, err error) {
	if len(b) > 0 && b[0] == snappy {
		n, err := s2.DecodedLen(b[1:])
		if err != nil {
			return nil, 0, err
		}
		if n > keys.MaxValueSize {
			return nil, 0, fmt.Errorf("pending entry of %d bytes decoded, over %d", n, keys.MaxValueSize)
		}
		if b, err = s2.Decode(make([]byte, n), b[1:]); err != nil {
			return nil, 0, err
		}
	}
	var c Chunk
	if err := cbor.Unmarshal(b, &c); err != nil {
		return nil, 0, err
	}
	if len(c.Spans) == 0 {
		return []cbor.RawMessage{b}, 0, nil
	}
	return c.Spans, c.Seq, nil
}

// Delete deletes the sender entry, pending spans and taken entries of
// session id.
func Delete(st sessions.Store, id uint64) error {
	start, end := keys.ImportPendingRange(id)
	if _, err := st.DeleteRange(start, end, nil); err != nil {
		return err
	}
	if _, err := st.DeleteRange(keys.ImportSender(id), keys.ImportSender(id+1), nil); err != nil {
		return err
	}
	start, end = keys.ImportTakenRange(id)
	_, err := st.DeleteRange(start, end, nil)
	return err
}
