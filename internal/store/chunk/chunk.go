// Package chunk is the format of a chunk: a run of records of one kind
// and one session, written together and stored as one entry of the store
// (docs/FORMAT.md §2.2). The Badger store writes a Write's runs as chunks
// and yields their records one by one, so no reader above the store sees
// one; the doctor counts and names them. What is here is the format alone:
// the key, the value, the bounds a writer keeps to and a reader checks.
package chunk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// Records written together, stored as one entry.
//
// Every record of a kept session used to be one Badger entry: a key, a
// skiplist node, a write-ahead log entry, a table index entry, its bytes
// copied and compressed by every flush and compaction that met it, and
// each table built for them cost Badger a 3 MiB index buffer. A Write now
// stores each run of its records of one kind and one session, seqs
// increasing and less than MaxSpan apart, as one chunk: the
// records' values side by side, compressed as one Snappy block (records
// of one kind repeat their attribute names), under a key that says where
// the run begins and ends. The store's Scan yields a chunk's records one by one, with
// the keys they were written under, so no reader above the Store sees a
// chunk (docs/FORMAT.md §2.2). Measured on a kept session (bench,
// BenchmarkSpanCPU): about half the process CPU a span of one entry per
// record (CHANGELOG.md, issue 35).
//
// A chunk's key is the key of its first record, then Mark, then its
// last record's seq, big-endian: it sorts after its first record's own
// key and before the next seq's; a record key's parser (keys.Parse)
// refuses it, so a reader that does not know chunks skips them rather
// than misreading them; and a delete that matches keys (keys.Parses) is
// asked of the records' keys instead (DeleteRange).

// Mark is the byte after a chunk's first record key.
const Mark = 0x01

// Version is the first byte of a chunk's value: its encoding.
const Version = 1

// The bounds of a chunk a Write makes. MaxSpan is part of the format
// (docs/FORMAT.md §2.2): it bounds how far before a key a Scan looks for a
// chunk that holds it, so no writer may make a chunk wider, and a reader
// refuses one. The others are the writer's choice, and a reader takes
// any chunk of up to keys.MaxValueSize decoded. MaxBytes keeps a
// chunk near Badger's 4 KiB blocks once compressed, so a damaged block
// loses about the records it would hold one by one, and a point lookup
// decodes little: against 64 KiB, 16 KiB cost the kept path no CPU that
// three rounds could tell, and 10 MiB less peak RSS (figure 5).
const (
	MaxRecords = 256
	MaxSpan    = 4096
	MaxBytes   = 16 << 10
)

// RecordKey splits a record key into the part a chunk's records share
// (namespace, 0x00, session) and its seq; ok is false for any other key.
func RecordKey(k []byte) (shared []byte, seq uint64, ok bool) {
	if !keys.IsRecord(k) {
		return nil, 0, false
	}
	_, tail, err := keys.Split(k)
	if err != nil || len(tail) != 16 {
		return nil, 0, false
	}
	return k[:len(k)-8], binary.BigEndian.Uint64(k[len(k)-8:]), true
}

// Key returns the key of a chunk whose first record's key is first
// and whose last record's seq is last.
func Key(first []byte, last uint64) []byte {
	k := make([]byte, 0, len(first)+9)
	k = append(k, first...)
	k = append(k, Mark)
	return binary.BigEndian.AppendUint64(k, last)
}

// ParseKey reports whether k is a chunk's key, and gives the key of
// its first record (a part of k) and its first and last seqs.
func ParseKey(k []byte) (first []byte, from, to uint64, ok bool) {
	if len(k) < 9 || k[len(k)-9] != Mark {
		return nil, 0, 0, false
	}
	first = k[:len(k)-9]
	_, from, ok = RecordKey(first)
	if !ok {
		return nil, 0, 0, false
	}
	to = binary.BigEndian.Uint64(k[len(k)-8:])
	return first, from, to, to >= from && to-from < MaxSpan
}

// SearchStart returns where a search for the keys from start on
// begins: MaxSpan-1 seqs before start in its session, where the
// first chunk that may hold a key from start on begins, when start lies
// among a session's records (a record's key, or any key between two);
// start itself otherwise.
func SearchStart(start []byte) []byte {
	kind, tail, err := keys.Split(start)
	if err != nil || len(tail) <= 8 || !keys.IsKind(string(kind)) {
		return start
	}
	var at [8]byte
	copy(at[:], tail[8:])
	seq := binary.BigEndian.Uint64(at[:])
	from := bytes.Clone(start[:len(start)-len(tail)+8])
	return binary.BigEndian.AppendUint64(from, seq-min(seq, MaxSpan-1))
}

// RecordAt returns the key of the record at seq whose key is k's but for
// its seq: k is a record key, such as a chunk's first.
func RecordAt(k []byte, seq uint64) []byte {
	out := make([]byte, 0, len(k))
	out = append(out, k[:len(k)-8]...)
	return binary.BigEndian.AppendUint64(out, seq)
}

// Chunked returns entries with each run of records that may share a chunk
// stored as one, and how many records each entry it returns holds.
// Entries that are not records, and records alone in their run, are kept
// as they are. The chunks' keys and values are new slices.
func Chunked(entries []sessions.Entry) ([]sessions.Entry, []int) {
	out := make([]sessions.Entry, 0, len(entries))
	counts := make([]int, 0, len(entries))
	for i := 0; i < len(entries); {
		j := runEnd(entries, i)
		if j-i < 2 {
			out = append(out, entries[i])
		} else {
			out = append(out, Encode(entries[i:j]))
		}
		counts = append(counts, j-i)
		i = j
	}
	return out, counts
}

// runEnd returns the end of the run of entries that begins at i: records
// of one kind and session, seqs increasing, within the chunk bounds.
func runEnd(entries []sessions.Entry, i int) int {
	shared, first, ok := RecordKey(entries[i].Key)
	if !ok {
		return i + 1
	}
	prev, size := first, len(entries[i].Value)
	j := i + 1
	for ; j < len(entries) && j-i < MaxRecords; j++ {
		s, seq, ok := RecordKey(entries[j].Key)
		size += len(entries[j].Value)
		if !ok || seq <= prev || seq-first >= MaxSpan || size > MaxBytes || !bytes.Equal(s, shared) {
			break
		}
		prev = seq
	}
	return j
}

// Encode returns the chunk of a run of records: its key, and as its
// value Version and the Snappy block of the records, each its seq's
// distance from the first, its value's length and its value, uvarints.
// The block is made in pooled buffers and the value copied out at its
// size: a Write's garbage is its chunks' compressed bytes, not twice its
// records' (figure 5's peak RSS).
func Encode(run []sessions.Entry) sessions.Entry {
	_, first, _ := RecordKey(run[0].Key)
	_, last, _ := RecordKey(run[len(run)-1].Key)
	scratch := scratchPool.Get().(*[2][]byte)
	defer scratchPool.Put(scratch)
	raw := binary.AppendUvarint(scratch[0][:0], uint64(len(run)))
	for _, e := range run {
		_, seq, _ := RecordKey(e.Key)
		raw = binary.AppendUvarint(raw, seq-first)
		raw = binary.AppendUvarint(raw, uint64(len(e.Value)))
		raw = append(raw, e.Value...)
	}
	if n := 1 + s2.MaxEncodedLen(len(raw)); cap(scratch[1]) < n {
		scratch[1] = make([]byte, n)
	}
	block := s2.EncodeSnappy(scratch[1][1:cap(scratch[1])], raw)
	v := make([]byte, 1+len(block))
	v[0] = Version
	copy(v[1:], block)
	scratch[0] = raw[:0]
	return sessions.Entry{Key: Key(run[0].Key, last), Value: v}
}

// scratchPool holds the buffers Encode makes a chunk in: its
// records side by side, and their Snappy block.
var scratchPool = sync.Pool{New: func() any { return new([2][]byte) }}

// ErrBad is the error of a chunk whose value does not decode.
var ErrBad = errors.New("otelrecords: undecodable chunk of records")

// A Record is one record of a chunk: its seq and its value, a part
// of the chunk's decoded block.
type Record struct {
	Seq   uint64
	Value []byte
}

// Decode decodes a chunk's value into its records, in seq order,
// using buf for the decoded block. Every record's seq lies in [from, to].
func Decode(v []byte, from, to uint64, buf []byte, recs []Record) ([]Record, []byte, error) {
	if to < from {
		return recs, buf, fmt.Errorf("%w: seqs from %d to %d", ErrBad, from, to)
	}
	if len(v) < 1 || v[0] != Version {
		return recs, buf, fmt.Errorf("%w: version %v", ErrBad, v[:min(len(v), 1)])
	}
	n, err := s2.DecodedLen(v[1:])
	if err != nil || n > keys.MaxValueSize {
		return recs, buf, fmt.Errorf("%w: %d bytes decoded (%v)", ErrBad, n, err)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	raw, err := s2.Decode(buf[:n], v[1:])
	if err != nil {
		return recs, buf, fmt.Errorf("%w: %v", ErrBad, err)
	}
	count, w := binary.Uvarint(raw)
	if w <= 0 || count > uint64(n) {
		return recs, buf, fmt.Errorf("%w: %d records", ErrBad, count)
	}
	raw = raw[w:]
	prev := uint64(0)
	for i := uint64(0); i < count; i++ {
		d, w1 := binary.Uvarint(raw)
		if w1 <= 0 {
			return recs, buf, fmt.Errorf("%w: record %d", ErrBad, i)
		}
		raw = raw[w1:]
		l, w2 := binary.Uvarint(raw)
		if w2 <= 0 || l > uint64(len(raw)-w2) {
			return recs, buf, fmt.Errorf("%w: record %d", ErrBad, i)
		}
		raw = raw[w2:]
		seq := from + d
		if d > to-from || (i > 0 && d <= prev) {
			return recs, buf, fmt.Errorf("%w: record %d out of order", ErrBad, i)
		}
		prev = d
		recs = append(recs, Record{Seq: seq, Value: raw[:l:l]})
		raw = raw[l:]
	}
	return recs, buf, nil
}
