// Package tallies is what kept sessions let go, counted: the records
// that keep-what-changed did not keep, summed by kind, name and key
// (docs/FORMAT.md §3.6). A tally is what lets a reader say that a key hit
// 390 times although no record of those hits was kept; writers
// (internal/write/recorder, through internal/write/tally) count it where
// they let a record go, and every view reads it beside the records
// (package explain/tallied sums it over the sessions a view reads).
//
// It is a package of its own, beside package sessions rather than in
// it: a tally is not a record, and sessions' reader reads records; Read
// reads a session's tally through the same Records.
package tallies

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// A Tally is what a kept session let go, counted: the records that
// keep-what-changed did not keep (observed records of a session not kept
// yet that its budget pushed out, the traces dropped under keep by trace,
// implicit marks let go), summed by kind, name and key attributes, never a
// record per span. It is what lets a reader say that a key hit 390 times
// although no record of those hits was kept (docs/FORMAT.md §3.6).
//
// A tally is written with its session, only when the session is kept, in
// parts: each writer of the session (a process, an Importer again after
// a restart) writes its own part under its own key and rewrites it as it
// counts; a reader sums the parts (Read). A session with no
// tally was written by a version that did not count what it let go: its
// records are all a reader knows.
//
// Every record a tally counts changed nothing, and nothing inside it did
// when it was let go: read as package explain's Verdict reads them, they are hits.
type Tally struct {
	// Session is the session the tally counts for.
	Session sessions.SessionID `cbor:"session"`
	// Part names the writer that counted it, unique among the session's
	// writers; 0 in a sum of parts.
	Part uint64 `cbor:"part,omitempty"`
	// Entries are the counts, one per kind, name and key, ordered by
	// kind, then name, then key (Compare).
	Entries []Entry `cbor:"entries,omitempty"`
	// Over is how many distinct keys past MaxKeys (or past
	// MaxBytes) were summed into their kind's rest (an entry with
	// Rest set) rather than counted on their own.
	Over int64 `cbor:"over,omitempty"`
}

// Entry counts the records of one kind, name and key a session let
// go.
type Entry struct {
	// Kind and Name are the records' kind and name; a name longer than
	// MaxValue bytes is cut.
	Kind string `cbor:"kind"`
	Name string `cbor:"name"`
	// Key are the records' key attributes (IsKey), in the order the
	// records had them; a string value longer than MaxValue bytes is
	// cut, and only the first MaxKeyAttrs are kept. Nil for records
	// without key attributes, and for a rest.
	Key sessions.Attrs `cbor:"key,omitzero"`
	// Rest marks the sum of a kind's keys past the tally's bound (Name
	// empty, Key nil): counted, but no longer told apart.
	Rest bool `cbor:"rest,omitempty"`
	// Count is how many records were let go.
	Count int64 `cbor:"count"`
	// Wall is how long they took, added up; Min and Max the shortest and
	// the longest.
	Wall time.Duration `cbor:"wall_ns"`
	Min  time.Duration `cbor:"min_ns"`
	Max  time.Duration `cbor:"max_ns"`
	// Hist counts the records by how long they took: Hist[i] those in
	// BucketBounds(i). Trailing empty buckets are left out, so it
	// has at most Buckets elements.
	Hist []int64 `cbor:"hist,omitempty"`
	// Outcomes counts the records by the value of their outcome
	// attribute (IsOutcome; "hit" for result=hit), as text.
	// Records without one are not in it.
	Outcomes map[string]int64 `cbor:"outcomes,omitempty"`
}

// The bounds of a tally: a writer never holds, nor writes, more.
const (
	// MaxKeys is how many distinct keys a session's part of a
	// tally counts on their own; the rest of each kind are summed.
	MaxKeys = 4096
	// MaxBytes is the largest encoded part of a tally a writer
	// writes: keys past it are summed as those past MaxKeys are.
	MaxBytes = 1 << 20
	// MaxValue is the longest name, or key attribute string value,
	// a tally keeps, in bytes: longer ones are cut.
	MaxValue = 256
	// MaxKeyAttrs is how many key attributes an entry keeps.
	MaxKeyAttrs = 8
	// Buckets is the number of buckets of Entry.Hist.
	Buckets = 32
)

// IsKey reports whether a tally counts records apart by the
// attribute k: "key", or a name ending in ".key" (autotune.key,
// cache.key), the key attributes explain's Match takes by default.
func IsKey(k string) bool { return k == "key" || strings.HasSuffix(k, ".key") }

// IsOutcome reports whether the attribute k is an outcome a tally
// counts by value: "result", or a name ending in ".result"
// (cache.result).
func IsOutcome(k string) bool { return k == "result" || strings.HasSuffix(k, ".result") }

// Bucket returns the bucket of Entry.Hist that counts a record
// that took d: 0 for under 1,024 ns, then one bucket per power of two,
// the last taking everything from 2^40 ns (about 18 minutes) up.
func Bucket(d time.Duration) int {
	if d < 1024 {
		return 0
	}
	return min(bits.Len64(uint64(d))-10, Buckets-1)
}

// BucketBounds returns the durations bucket i counts: lo <= d < hi,
// hi 0 for the last bucket, which has no upper bound.
func BucketBounds(i int) (lo, hi time.Duration) {
	switch {
	case i <= 0:
		return 0, 1024
	case i >= Buckets-1:
		return 1 << 40, 0
	}
	return 1 << (i + 9), 1 << (i + 10)
}

// Add counts one record that took d, with the outcome attribute's value
// outcome ("" when it has none).
func (e *Entry) Add(d time.Duration, outcome string) {
	if d < 0 {
		d = 0
	}
	if e.Count == 0 || d < e.Min {
		e.Min = d
	}
	if d > e.Max {
		e.Max = d
	}
	e.Count++
	e.Wall += d
	b := Bucket(d)
	if len(e.Hist) <= b {
		e.Hist = append(e.Hist, make([]int64, b+1-len(e.Hist))...)
	}
	e.Hist[b]++
	if outcome != "" {
		if e.Outcomes == nil {
			e.Outcomes = map[string]int64{}
		}
		e.Outcomes[outcome]++
	}
}

// Merge adds the counts of o, an entry of the same kind, name and key.
func (e *Entry) Merge(o Entry) {
	if o.Count == 0 {
		return
	}
	if e.Count == 0 || o.Min < e.Min {
		e.Min = o.Min
	}
	e.Max = max(e.Max, o.Max)
	e.Count += o.Count
	e.Wall += o.Wall
	if len(e.Hist) < len(o.Hist) {
		e.Hist = append(e.Hist, make([]int64, len(o.Hist)-len(e.Hist))...)
	}
	for i, n := range o.Hist {
		e.Hist[i] += n
	}
	for k, n := range o.Outcomes {
		if e.Outcomes == nil {
			e.Outcomes = map[string]int64{}
		}
		e.Outcomes[k] += n
	}
}

// Quantile estimates the duration under which a fraction q (0 to 1) of
// the entry's records took, from Hist: the middle of the bucket it falls
// in, within Min and Max. Zero for an empty entry.
func (e Entry) Quantile(q float64) time.Duration {
	if e.Count == 0 {
		return 0
	}
	rank := int64(q*float64(e.Count-1)) + 1
	var seen int64
	for i, n := range e.Hist {
		if seen += n; seen >= rank {
			lo, hi := BucketBounds(i)
			if hi == 0 {
				return e.Max
			}
			return min(max(lo+(hi-lo)/2, e.Min), e.Max)
		}
	}
	return e.Max
}

// Mean is the mean duration of the entry's records.
func (e Entry) Mean() time.Duration {
	if e.Count == 0 {
		return 0
	}
	return e.Wall / time.Duration(e.Count)
}

// identity is the entry's kind, name, rest mark and key, as bytes that
// compare as Compare orders entries.
func (e Entry) identity() string {
	var b strings.Builder
	b.WriteString(e.Kind)
	b.WriteByte(0)
	b.WriteString(e.Name)
	b.WriteByte(0)
	if e.Rest {
		b.WriteByte(1)
	}
	if len(e.Key) > 0 {
		k, _ := e.Key.MarshalCBOR() // attributes always encode
		b.Write(k)
	}
	return b.String()
}

// Compare orders tally entries by kind, then name, then rest (a kind's
// rest after its keys), then key, as Tally.Entries holds them.
func (e Entry) Compare(o Entry) int {
	return cmp.Compare(e.identity(), o.identity())
}

// Merge adds the parts of o to t: entries of one kind, name and key are
// summed, the others added, in order. t keeps its Session; its Part
// becomes 0 when o is another part.
func (t *Tally) Merge(o Tally) {
	if t.Part != o.Part {
		t.Part = 0
	}
	t.Over += o.Over
	if len(o.Entries) == 0 {
		return
	}
	at := make(map[string]int, len(t.Entries))
	for i, e := range t.Entries {
		at[e.identity()] = i
	}
	for _, e := range o.Entries {
		if i, ok := at[e.identity()]; ok {
			t.Entries[i].Merge(e)
			continue
		}
		var c Entry
		c.Kind, c.Name, c.Key, c.Rest = e.Kind, e.Name, slices.Clone(e.Key), e.Rest
		c.Merge(e)
		at[c.identity()] = len(t.Entries)
		t.Entries = append(t.Entries, c)
	}
	slices.SortStableFunc(t.Entries, Entry.Compare)
}

// Count returns how many records the tally counts, over every entry.
func (t Tally) Count() int64 {
	var n int64
	for _, e := range t.Entries {
		n += e.Count
	}
	return n
}

// MarshalCBOR encodes the tally as the value of its key (docs/FORMAT.md
// §3.6), deterministically.
func (t Tally) MarshalCBOR() ([]byte, error) { return encMode.Marshal(tallyValue(t)) }

// tallyValue is Tally without its methods.
type tallyValue Tally

// Decode decodes a part of a tally, as stored, within the limits of
// every value a reader decodes (docs/FORMAT.md §5).
func Decode(b []byte) (Tally, error) {
	var t tallyValue
	if len(b) > keys.MaxValueSize {
		return Tally{}, fmt.Errorf("tally of %d bytes exceeds %d", len(b), keys.MaxValueSize)
	}
	if err := cw.CheckBudget(b); err != nil {
		return Tally{}, err
	}
	if err := decMode.Unmarshal(b, &t); err != nil {
		return Tally{}, fmt.Errorf("tally: %w", err)
	}
	for _, e := range t.Entries {
		if len(e.Hist) > Buckets {
			return Tally{}, fmt.Errorf("tally: an entry with %d buckets, at most %d", len(e.Hist), Buckets)
		}
	}
	return Tally(t), nil
}

// encMode and decMode are sessions' own: core deterministic encoding, and
// the decode limits of every value a reader decodes (docs/FORMAT.md §5).
var (
	encMode = must(cbor.CoreDetEncOptions().EncMode())
	decMode = must(cbor.DecOptions{
		MaxNestedLevels:  cw.MaxNestedLevels,
		MaxArrayElements: cw.MaxArrayElements,
		MaxMapPairs:      cw.MaxMapPairs,
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthAllowed,
		IntDec:           cbor.IntDecConvertNone,
		UTF8:             cbor.UTF8DecodeInvalid,
	}.DecMode())
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err) // constant options: a test run finds it
	}
	return v
}
