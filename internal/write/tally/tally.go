// Package tally counts what a session lets go (docs/FORMAT.md §3.6):
// the records keep-what-changed does not keep, read from their encoded
// values where the Recorder decides to let them go, summed by kind, name
// and key attributes into a tallies.Tally, within its bounds. A Counter
// allocates for a key it has not seen and for nothing else: counting a
// record of a key seen before reads its value in place and updates
// numbers.
package tally

import (
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tallies"
)

// MaxOutcomes is how many values of the outcome attribute an entry counts
// apart; records with further values are counted, but not by outcome.
const MaxOutcomes = 16

// The bytes an entry, and a tally, may take encoded, besides an entry's
// strings: every key of the map, every number at its widest (9 bytes),
// every bucket of the histogram. A Counter reserves this much for an
// entry when it makes one, so that what it writes stays within
// tallies.MaxBytes however its counts grow.
const (
	entryFixed  = 400
	tallyFixed  = 64
	outcomeCost = 12 // an outcome's count and head, besides its text
)

// Counter is the tally of one session in progress. It is not safe for
// concurrent use: the Recorder holds its lock around every call.
type Counter struct {
	at      map[string]int // identity -> index in entries
	entries []tallies.Entry
	ids     []string       // the identity of each entry, as Compare orders them
	order   []int          // scratch: entries in that order
	own     int            // entries that count one key (not rests)
	rests   map[string]int // kind -> index of its rest
	overAt  map[uint64]struct{}
	seed    maphash.Seed
	over    int64
	size    int   // bytes reserved for the encoded tally
	count   int64 // records counted
	changed bool
	id      []byte // scratch: the identity of the record being counted
	text    []byte // scratch: its outcome as text
}

// New returns an empty Counter.
func New() *Counter {
	return &Counter{at: map[string]int{}, rests: map[string]int{}, seed: maphash.MakeSeed(), size: tallyFixed}
}

// Count returns how many records were counted.
func (c *Counter) Count() int64 { return c.count }

// Changed reports whether a record was counted since the last Tally.
func (c *Counter) Changed() bool { return c.changed }

// Tally returns the tally as it is now, for session id and part, and
// marks it unchanged. Its entries share their histograms and outcomes
// with the Counter: encode it before counting more.
func (c *Counter) Tally(id sessions.SessionID, part uint64) tallies.Tally {
	c.changed = false
	t := tallies.Tally{Session: id, Part: part, Over: c.over}
	if len(c.entries) == 0 {
		return t
	}
	// In the order of Compare, by the identities the Counter keeps:
	// Compare makes each one again, for every comparison.
	c.order = c.order[:0]
	for i := range c.entries {
		c.order = append(c.order, i)
	}
	slices.SortFunc(c.order, func(a, b int) int { return strings.Compare(c.ids[a], c.ids[b]) })
	t.Entries = make([]tallies.Entry, len(c.entries))
	for i, j := range c.order {
		t.Entries[i] = c.entries[j]
	}
	return t
}

// Add counts a record of kind let go, from its encoded value (FORMAT.md
// §3.2): its name, wall_ns, key attributes and outcome, read in place. A
// value that does not read as a record is counted under its kind with no
// name, no key and no duration.
func (c *Counter) Add(kind []byte, value []byte) { add(c, kind, value) }

// AddString is Add of a kind given as a string.
func (c *Counter) AddString(kind string, value []byte) { add(c, kind, value) }

// AddHinted is Add of a value whose fields h locates, and reports
// whether h fit the value; a value it does not fit is walked as Add
// walks it.
func (c *Counter) AddHinted(kind []byte, value []byte, h Hint) (fit bool) {
	return addHinted(c, kind, value, h)
}

func add[K string | []byte](c *Counter, kind K, value []byte) { addHinted(c, kind, value, Hint{}) }

func addHinted[K string | []byte](c *Counter, kind K, value []byte, h Hint) (fit bool) {
	var r record
	if fit = h.Name != 0 && r.hinted(value, h); !fit {
		r = record{}
		r.read(value)
	}
	c.id = append(c.id[:0], kind...)
	c.id = append(c.id, 0)
	c.id = append(c.id, cut(r.name)...)
	c.id = append(c.id, 0)
	keyAt := len(c.id)
	if r.nkeys > 0 {
		c.id = cw.AppendMapHead(c.id, r.nkeys)
		for i := range r.nkeys {
			a := r.keys[i]
			c.id = cw.AppendHead(c.id, cw.MajorText, uint64(a.k1-a.k0))
			c.id = append(c.id, value[a.k0:a.k1]...)
			c.id = appendCut(c.id, value[a.v0:a.v1])
		}
	}
	if e := c.entry(len(kind), keyAt); e != nil {
		c.add(e, r.wall, c.outcome(value, r.outcome))
	}
	return fit
}

// AddMark counts an implicit mark let go, named name, that ran for d.
func (c *Counter) AddMark(name string, d time.Duration) {
	if e := c.named(sessions.MarksKind, name); e != nil {
		c.add(e, d, nil)
	}
}

// Merge adds o, the counts of records of kind named name without key
// attributes, summed elsewhere (the exporter's implicit marks).
func (c *Counter) Merge(kind, name string, o tallies.Entry) {
	if o.Count == 0 {
		return
	}
	if e := c.named(kind, name); e != nil {
		c.changed = true
		c.count += o.Count
		e.Merge(o)
	}
}

// named returns the entry of kind and name without a key.
func (c *Counter) named(kind, name string) *tallies.Entry {
	c.id = append(c.id[:0], kind...)
	c.id = append(c.id, 0)
	c.id = append(c.id, cutString(name)...)
	c.id = append(c.id, 0)
	return c.entry(len(kind), len(c.id))
}

// add counts one record of entry e.
func (c *Counter) add(e *tallies.Entry, d time.Duration, outcome []byte) {
	c.changed = true
	c.count++
	e.Add(d, "")
	if outcome == nil {
		return
	}
	for k := range e.Outcomes {
		// At most MaxOutcomes of them; indexing by string(outcome) to
		// assign would make a string each time.
		if k == string(outcome) {
			e.Outcomes[k]++
			return
		}
	}
	if len(e.Outcomes) >= MaxOutcomes || c.size+len(outcome)+outcomeCost > tallies.MaxBytes {
		return
	}
	if e.Outcomes == nil {
		e.Outcomes = map[string]int64{}
	}
	c.size += len(outcome) + outcomeCost
	e.Outcomes[string(outcome)] = 1
}

// entry returns the entry of the identity in c.id (the kind its first
// kindLen bytes, the key from keyAt on), making it when there is room,
// or else the rest of its kind.
func (c *Counter) entry(kindLen, keyAt int) *tallies.Entry {
	if i, ok := c.at[string(c.id)]; ok {
		return &c.entries[i]
	}
	cost := entryFixed + len(c.id)
	if c.own < tallies.MaxKeys && c.size+cost <= tallies.MaxBytes-restRoom {
		id := string(c.id)
		e := tallies.Entry{Kind: id[:kindLen], Name: id[kindLen+1 : keyAt-1], Hist: make([]int64, 0, tallies.Buckets)}
		if keyAt < len(c.id) {
			if err := e.Key.UnmarshalCBOR(c.id[keyAt:]); err != nil {
				e.Key = nil
			}
		}
		c.size += cost
		c.own++
		c.at[id] = len(c.entries)
		c.entries = append(c.entries, e)
		c.ids = append(c.ids, id)
		return &c.entries[len(c.entries)-1]
	}
	c.countOver()
	kind := c.id[:kindLen]
	if i, ok := c.rests[string(kind)]; ok {
		return &c.entries[i]
	}
	k := string(kind)
	if c.size+entryFixed+len(k) > tallies.MaxBytes {
		// No room left even for the kind's rest: a kind "" rest sums
		// every such kind (reserved in restRoom's last entry).
		k = ""
		if i, ok := c.rests[k]; ok {
			return &c.entries[i]
		}
	}
	c.size += entryFixed + len(k)
	c.rests[k] = len(c.entries)
	c.entries = append(c.entries, tallies.Entry{Kind: k, Rest: true, Hist: make([]int64, 0, tallies.Buckets)})
	c.ids = append(c.ids, k+"\x00\x00\x01") // a rest's identity (tallies.Entry.Compare)
	return &c.entries[len(c.entries)-1]
}

// restRoom is the room kept past the last key counted on its own for the
// rests of the kinds summed past the bound.
const restRoom = 64 * (entryFixed + 64)

// countOver counts the key in c.id among those summed into a rest: once
// per key while the Counter remembers tallies.MaxKeys of them, then once
// per record of a key it does not remember (Over then says at most).
func (c *Counter) countOver() {
	h := maphash.Bytes(c.seed, c.id)
	if _, ok := c.overAt[h]; ok {
		return
	}
	c.over++
	if len(c.overAt) < tallies.MaxKeys {
		if c.overAt == nil {
			c.overAt = map[uint64]struct{}{}
		}
		c.overAt[h] = struct{}{}
	}
}

// outcome returns the outcome attribute's value at p in value, as text
// (a string cut as names are; a number, a bool), or nil.
func (c *Counter) outcome(value []byte, p span) []byte {
	if p.v1 == 0 {
		return nil
	}
	r := cw.NewReader(value[p.v0:p.v1])
	h, ok := r.Head()
	if !ok {
		return nil
	}
	c.text = c.text[:0]
	switch h.Major {
	case cw.MajorText:
		b, ok := r.Take(h.Arg)
		if !ok {
			return nil
		}
		return cut(b)
	case cw.MajorUint, cw.MajorNeg:
		n, ok := h.Int()
		if !ok {
			return nil
		}
		c.text = strconv.AppendInt(c.text, n, 10)
	case cw.MajorSimple:
		switch h.Info {
		case cw.InfoTrue, cw.InfoFalse:
			c.text = strconv.AppendBool(c.text, h.Info == cw.InfoTrue)
		case cw.InfoFloat16, cw.InfoFloat32, cw.InfoFloat64:
			f, _ := h.Float()
			c.text = strconv.AppendFloat(c.text, f, 'g', -1, 64)
		default:
			return nil
		}
	default:
		return nil
	}
	return c.text
}

// span is where a piece of a value lies: a key's text k0:k1, its value
// v0:v1.
type span struct{ k0, k1, v0, v1 int }

// record is what a tally reads of a record's value.
type record struct {
	name    []byte
	wall    time.Duration
	keys    [tallies.MaxKeyAttrs]span
	nkeys   int
	outcome span
}

// read reads a stamped record's name, wall_ns, key attributes and
// outcome in place; what it cannot read it leaves zero. It walks the
// value as cborwire.Reader does, by hand: it runs for every record let
// go (a warm session lets one go for every one it holds), and the
// Reader's calls were most of its cost.
func (rec *record) read(b []byte) {
	n, i := mapAt(b, 0)
	for ; n > 0; n-- {
		k, j := textAt(b, i)
		if j < 0 {
			return
		}
		if string(k) == cw.KeyRecord {
			rec.body(b, j)
			return
		}
		if i = skip(b, j); i < 0 {
			return
		}
	}
}

// body reads the fields of a record's body at b[i:] up to wall_ns, the
// last a tally needs.
func (rec *record) body(b []byte, i int) {
	n, i := mapAt(b, i)
	for ; n > 0; n-- {
		k, j := textAt(b, i)
		if j < 0 {
			return
		}
		switch string(k) {
		case cw.KeyName:
			if rec.name, i = textAt(b, j); i < 0 {
				return
			}
		case cw.KeyAttrs:
			if i = rec.attrs(b, j); i < 0 {
				return
			}
		case cw.KeyWall:
			if j < len(b) && b[j]>>5 == byte(cw.MajorUint) {
				if d, _, ok := arg(b, j); ok && d <= 1<<62 {
					rec.wall = time.Duration(d)
				}
			}
			return
		default:
			if i = skip(b, j); i < 0 {
				return
			}
		}
	}
}

// attrs reads an attributes map at b[i:], noting where its key
// attributes and its outcome are, and returns where it ends, or -1.
func (rec *record) attrs(b []byte, i int) int {
	n, i := mapAt(b, i)
	for ; n > 0 && i >= 0; n-- {
		k, j := textAt(b, i)
		if j < 0 {
			return -1
		}
		if i = skip(b, j); i < 0 {
			return -1
		}
		s := span{k0: j - len(k), k1: j, v0: j, v1: i}
		switch {
		case isKey(k) && rec.nkeys < len(rec.keys):
			rec.keys[rec.nkeys] = s
			rec.nkeys++
		case isOutcome(k) && rec.outcome.v1 == 0:
			rec.outcome = s
		}
	}
	return i
}

// arg reads the head at b[i]: its argument and where it ends; false for
// an indefinite length, a reserved head or one cut short.
func arg(b []byte, i int) (uint64, int, bool) {
	if i >= len(b) {
		return 0, 0, false
	}
	if ai := b[i] & 0x1f; ai < 24 {
		return uint64(ai), i + 1, true
	}
	return longArg(b, i)
}

// longArg is arg of a head whose argument follows it.
func longArg(b []byte, i int) (uint64, int, bool) {
	ai := b[i] & 0x1f
	i++
	if ai < 24 || ai > 27 {
		return 0, 0, false
	}
	w := 1 << (ai - 24)
	if len(b)-i < w {
		return 0, 0, false
	}
	var n uint64
	for _, c := range b[i : i+w] {
		n = n<<8 | uint64(c)
	}
	return n, i + w, true
}

// skip returns where the item at b[i] ends, or -1: cborwire.Reader.Skip
// on an index.
func skip(b []byte, i int) int {
	for left := uint64(1); left > 0; left-- {
		if i >= len(b) {
			return -1
		}
		c := b[i]
		n, j := uint64(c&0x1f), i+1
		if n >= 24 {
			var ok bool
			if n, j, ok = longArg(b, i); !ok {
				return -1
			}
		}
		i = j
		switch cw.Major(c >> 5) {
		case cw.MajorBytes, cw.MajorText:
			if n > uint64(len(b)-i) {
				return -1
			}
			i += int(n)
		case cw.MajorArray:
			if n > uint64(len(b)-i) {
				return -1
			}
			left += n
		case cw.MajorMap:
			if n > uint64(len(b)-i) {
				return -1
			}
			left += 2 * n
		case cw.MajorTag:
			left++
		}
	}
	return i
}

// mapAt reads the head of a map at b[i]: its pairs and where they
// start; 0 pairs for anything else. A map of fewer than 24 pairs, the
// usual, is read inline.
func mapAt(b []byte, i int) (int, int) {
	if i >= 0 && i < len(b) && b[i]>>5 == byte(cw.MajorMap) && b[i]&0x1f < 24 {
		return int(b[i] & 0x1f), i + 1
	}
	return mapLong(b, i)
}

// mapLong is mapAt of any map.
func mapLong(b []byte, i int) (int, int) {
	if i < 0 || i >= len(b) || b[i]>>5 != byte(cw.MajorMap) {
		return 0, -1
	}
	n, j, ok := arg(b, i)
	if !ok || n > uint64(len(b)-j) {
		return 0, -1
	}
	return int(n), j
}

// textAt reads a text string at b[i]: its bytes and where it ends, or
// -1. One of fewer than 24 bytes (a key, a short name) is read inline.
func textAt(b []byte, i int) ([]byte, int) {
	if i >= 0 && i < len(b) && b[i]>>5 == byte(cw.MajorText) && b[i]&0x1f < 24 {
		if n, j := int(b[i]&0x1f), i+1; n <= len(b)-j {
			return b[j : j+n], j + n
		}
	}
	return textLong(b, i)
}

// textLong is textAt of any text string.
func textLong(b []byte, i int) ([]byte, int) {
	if i < 0 || i >= len(b) || b[i]>>5 != byte(cw.MajorText) {
		return nil, -1
	}
	n, j, ok := arg(b, i)
	if !ok || n > uint64(len(b)-j) {
		return nil, -1
	}
	return b[j : j+int(n)], j + int(n)
}

// isKey is tallies.IsKey of bytes, without making a string.
func isKey(k []byte) bool {
	n := len(k)
	return string(k) == "key" || n > 4 && string(k[n-4:]) == ".key"
}

// isOutcome is tallies.IsOutcome of bytes.
func isOutcome(k []byte) bool {
	n := len(k)
	return string(k) == "result" || n > 7 && string(k[n-7:]) == ".result"
}

// cut returns b cut to tallies.MaxValue bytes, at the start of a
// UTF-8 sequence.
func cut(b []byte) []byte {
	if len(b) <= tallies.MaxValue {
		return b
	}
	n := tallies.MaxValue
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// appendCut appends the encoded attribute value v, a text string cut as
// cut cuts it, anything else as it is.
func appendCut(dst, v []byte) []byte {
	r := cw.NewReader(v)
	if h, ok := r.Head(); ok && h.Major == cw.MajorText && h.Arg > tallies.MaxValue {
		if s, ok := r.Take(h.Arg); ok {
			s = cut(s)
			dst = cw.AppendHead(dst, cw.MajorText, uint64(len(s)))
			return append(dst, s...)
		}
	}
	return append(dst, v...)
}

// cutString is cut of a string.
func cutString(s string) string {
	if len(s) <= tallies.MaxValue {
		return s
	}
	n := tallies.MaxValue
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
