// Package handed remembers, for a sink that hands a batch on before it
// writes it (the Collector's records processor), which head of the next
// batch was handed on already. A write that fails after the batch was
// handed on leaves it queued, in front of what came since, and the
// Recorder gives it again: handed on again, downstream would take it
// twice with nothing crashed.
package handed

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/otelrecords/otelrecords/internal/ground/keys"

	"github.com/otelrecords/otelrecords/sessions"
)

// seed is the hash seed of every Head: the sums are never kept past the
// process.
var seed = maphash.MakeSeed()

// Head is the entries one queue handed on and did not write: how many, and
// a sum of their keys and values, by which a batch given again is known
// to begin with them. The zero Head has handed on nothing. It is not safe
// for concurrent use: a Recorder gives its batches one at a time.
type Head struct {
	n   int
	sum uint64
}

// Rest returns the entries of es to hand on: those after the head handed
// on, when es begins with it, or else all of them.
func (h *Head) Rest(es []sessions.Entry) []sessions.Entry {
	if h.n == 0 || h.n > len(es) || sumOf(es[:h.n]) != h.sum {
		return es
	}
	return es[h.n:]
}

// Unwritten notes that es, handed on, were not written: the queue gives
// them again, at the head of its next batch.
func (h *Head) Unwritten(es []sessions.Entry) {
	h.n, h.sum = len(es), sumOf(es)
}

// Written notes that what was handed on was written: nothing of it waits.
func (h *Head) Written() { h.n, h.sum = 0, 0 }

// sumOf hashes the keys and values of es, each length first; of a
// record, only its key. A record's key is its stamp, which no other
// record has, and its value may be filled in after it was handed on (a
// record queued unencoded, whose write failed: importer/internal/
// unencoded) — the same record still, not to be handed on again.
func sumOf(es []sessions.Entry) uint64 {
	var m maphash.Hash
	m.SetSeed(seed)
	var n [8]byte
	for _, e := range es {
		m.Write(binary.LittleEndian.AppendUint32(n[:0], uint32(len(e.Key))))
		m.Write(e.Key)
		if isRecord(e.Key) {
			continue
		}
		m.Write(binary.LittleEndian.AppendUint32(n[:0], uint32(len(e.Value))))
		m.Write(e.Value)
	}
	return m.Sum64()
}

// isRecord reports whether key is a record's.
func isRecord(key []byte) bool {
	k, tail, err := keys.Split(key)
	_, _, ok := keys.RecordTail(tail)
	return err == nil && ok && string(k) != keys.SessionsKind
}
