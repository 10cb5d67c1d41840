package explain

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// Match says which records of two sides of a diff are the same work: those
// of one kind, name and verdict (a hit, a miss, work: see Verdict) whose
// key attributes are equal. The other attributes are compared, but those
// Ignore names and, unless Connections is set, those that name a
// connection or a listener rather than the work (PerConnection,
// PerListener).
type Match struct {
	// Keys are the key attributes; nil means "key" and those ending in
	// ".key" (autotune.key).
	Keys []string
	// Ignore are attributes left out of the comparison: those that
	// change from run to run (a response's size, say). Each is a name,
	// or a pattern where * stands for any run of characters but a slash
	// (http.response.*), as path.Match reads it.
	Ignore []string
	// Connections compares the attributes of PerConnection and
	// PerListener too, which are otherwise left out.
	Connections bool
	// Body reads a record's effect; nil means StoredBody.
	Body Body
}

// PerConnection are the attributes OpenTelemetry's semantic conventions
// define for one connection rather than the work done over it — the
// peer's address and port, the client's, the socket's (older
// conventions) — which differ from one request to the next, and so from
// one run to the next, whatever the work. A diff leaves them out unless
// Match.Connections is set. Patterns as Match.Ignore reads them.
var PerConnection = []string{
	"network.peer.*", "network.local.port", "client.address", "client.port",
	"client.socket.*", "server.socket.*", "net.sock.*", "net.peer.ip", "net.peer.port",
}

// PerListener are the attributes a server's span (span kind server)
// gives the port it listens on: the same for each request, but another
// for each run of a server that takes any free port, as tests do. A diff
// leaves them out of server spans unless Match.Connections is set; on a
// client's span they name the server called, and are compared.
var PerListener = []string{"server.port", "net.host.port"}

// leavesOut reports whether Match leaves the attribute k of a record
// out of the comparison by default: one of PerConnection, or of
// PerListener on a server's span.
func (m Match) leavesOut(k, spanKind string) bool {
	if m.Connections {
		return false
	}
	return matchAny(PerConnection, k) || spanKind == "server" && matchAny(PerListener, k)
}

// matchAny reports whether one of patterns names k or matches it.
func matchAny(patterns []string, k string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, k); p == k || ok && err == nil {
			return true
		}
	}
	return false
}

// IsKey reports whether the attribute k is a key attribute.
func (m Match) IsKey(k string) bool {
	if m.Keys != nil {
		return slices.Contains(m.Keys, k)
	}
	return k == "key" || strings.HasSuffix(k, ".key")
}

// Ignores reports whether the attribute k is left out of the comparison:
// Ignore names it, or one of its patterns matches it. A malformed pattern
// matches nothing (Check reports it).
func (m Match) Ignores(k string) bool { return matchAny(m.Ignore, k) }

// Check returns an error naming the first malformed pattern of Ignore
// (an unclosed [, say), or nil.
func (m Match) Check() error {
	for _, p := range m.Ignore {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("%q: %w", p, err)
		}
	}
	return nil
}

// KeyOf returns the key attributes of attrs (IsKey), in a new slice; nil
// when it has none.
func (m Match) KeyOf(attrs sessions.Attrs) sessions.Attrs {
	var key sessions.Attrs
	for _, kv := range attrs {
		if m.IsKey(kv.Key) {
			key = append(key, kv)
		}
	}
	return key
}

// Side is what one side of a diff recorded: a store, or some of its
// sessions.
type Side struct {
	// Sessions is how many sessions its records belong to, and Records
	// how many records it has.
	Sessions, Records int
	// Duration is how long its sessions lasted, added up: for one
	// session, its duration (from its clock's start to the end of its
	// last record).
	Duration time.Duration
	// Kinds is each kind's time, counted once within each session (see
	// KindSummary.Wall), added up over the sessions.
	Kinds map[string]time.Duration
	// LeftOut are the attributes its records have that were left out of
	// the comparison by default (PerConnection, PerListener), in key
	// order: not those Match.Ignore names.
	LeftOut []string

	entries map[string]*Entry // by identity
}

// Entry is what one side recorded of one key, with one verdict: how many
// records, how long they took, and the newest one's attributes.
type Entry struct {
	Kind, Name string
	// Key are the key attributes.
	Key sessions.Attrs
	// Verdict is what the records did: hits, misses, work done, or
	// Unknown for records that do not say (written before records kept
	// their effect). Records of one key with different verdicts are
	// different entries: work done is compared with work done, misses
	// with misses and hits with hits.
	Verdict Verdict
	// Effect is the records' stored effect, "changed" or "observed" (hits
	// and misses both); "" for records that do not say.
	Effect string
	// Attributes are the newest record's compared attributes, a string
	// longer than 1 KiB held as its start, length and digest: neither
	// key nor ignored.
	Attributes sessions.Attrs
	// Count is how many records of the key the side holds.
	Count int
	// Median is the median of their walls (of an even count, the mean of
	// the middle two), and Total their sum.
	Median, Total time.Duration

	walls []time.Duration // until Read ends
}

// Read reads one side of a diff from a store: the records of the kinds
// (every kind when nil) that the options select (sessions.InSession,
// say), in stamp order, keeping per key and verdict the count, median and
// total of the records' walls and the newest one's attributes, and per
// session its duration and its kinds' times. To tell a hit from a miss it
// reads the tree of each session with observed records (every kind of
// it, once). It holds a few words per key and per kind, a wall per record
// (for the medians), and one session's tree and intervals at a time.
func (m Match) Read(r *sessions.Records, kinds []string, opts ...sessions.ReadOption) (*Side, error) {
	if kinds == nil {
		var err error
		if kinds, err = r.Kinds(); err != nil {
			return nil, err
		}
	}
	body := m.Body
	if body == nil {
		body = StoredBody
	}
	side := &Side{Kinds: map[string]time.Duration{}, entries: map[string]*Entry{}}
	var (
		tally   Tally
		session sessions.SessionID
		started bool
		trees   sessionTrees
		leftOut = map[string]bool{}
	)
	fold := func() {
		s := tally.Summary()
		side.Duration = addSat(side.Duration, s.End)
		for _, k := range s.Kinds {
			side.Kinds[k.Kind] = addSat(side.Kinds[k.Kind], k.Wall)
		}
		tally = Tally{}
	}
	for kr, err := range r.InStampOrder(kinds, opts...) {
		if err != nil {
			return nil, err
		}
		if !started || kr.Stamp.Session != session {
			if started {
				fold()
			}
			started, session = true, kr.Stamp.Session
			side.Sessions++
		}
		side.Records++
		tally.Add(kr)
		var key, attrs sessions.Attrs
		for _, kv := range kr.Record.Attributes {
			switch {
			case m.IsKey(kv.Key):
				key = append(key, kv)
			case m.Ignores(kv.Key):
			case m.leavesOut(kv.Key, kr.Record.SpanKind):
				if !leftOut[kv.Key] {
					leftOut[strings.Clone(kv.Key)] = true
				}
			default:
				attrs = append(attrs, kv)
			}
		}
		verdict, _, err := trees.verdict(r, body, kr)
		if err != nil {
			return nil, err
		}
		effect := ""
		if e, known := body.Effect(&kr.Record); known {
			effect = e.String()
		}
		id := identity(kr.Kind, kr.Record.Name, key) + verdict.String()
		e := side.entries[id]
		if e == nil {
			e = &Entry{Kind: kr.Kind, Name: strings.Clone(kr.Record.Name), Key: heldAttrs(key), Verdict: verdict, Effect: effect}
			side.entries[id] = e
		}
		e.Count++
		wall := max(kr.Record.Wall, 0)
		e.Total = addSat(e.Total, wall)
		e.walls = append(e.walls, wall)
		e.Attributes = heldAttrs(attrs) // records come in stamp order: the last is the newest
	}
	if started {
		fold()
	}
	side.LeftOut = sortedKeys(leftOut)
	for _, e := range side.entries {
		e.Median, e.walls = median(e.walls), nil
	}
	return side, nil
}

// median returns the median of walls, which it sorts: of an even count,
// the mean of the middle two; 0 of none.
func median(walls []time.Duration) time.Duration {
	n := len(walls)
	if n == 0 {
		return 0
	}
	slices.Sort(walls)
	if n%2 == 1 {
		return walls[n/2]
	}
	a, b := walls[n/2-1], walls[n/2]
	return a + (b-a)/2
}

// identity returns the key a record falls under, as a map key: its kind,
// name and key attributes, encoded so that no two differ only in how they
// join.
func identity(kind, name string, key sessions.Attrs) string {
	b, _ := json.Marshal([]any{kind, name, key}) // strings and attribute values always encode
	return string(b)
}

// Change says how a key differs between the sides of a diff.
type Change string

const (
	// Same is a key both sides recorded with the same attributes.
	Same Change = "same"
	// Changed is a key both sides recorded, with different attributes.
	Changed Change = "changed"
	// OnlyInA is a key only side A recorded.
	OnlyInA Change = "only_in_a"
	// OnlyInB is a key only side B recorded.
	OnlyInB Change = "only_in_b"
)

// KeyDiff is one key of a diff, and how it differs.
type KeyDiff struct {
	Change Change
	// A and B are what each side recorded of the key; nil for none.
	A, B *Entry
	// Differences are the attributes that differ, in key order: Before
	// is A's value, After B's.
	Differences []Difference
}

// Entry returns what either side recorded of the key: its kind, name and
// key attributes are the same on both.
func (d KeyDiff) Entry() *Entry { return cmp.Or(d.A, d.B) }

// Total is a time on both sides of a diff: a kind's (Kind set) or the
// sessions' duration (Kind empty).
type Total struct {
	Kind string
	A, B time.Duration
}

// Comparison is a diff of two sides.
type Comparison struct {
	// Keys are every key of either side, by kind, name and key
	// attributes.
	Keys []KeyDiff
	// Kinds are each kind's time on both sides, in kind order.
	Kinds []Total
	// Duration is the sides' duration.
	Duration Total
	// LeftOut are the attributes either side left out by default
	// (Side.LeftOut), in key order.
	LeftOut []string
}

// Diff compares two sides, as Match.Read read them.
func Diff(a, b *Side) Comparison {
	var c Comparison
	for id, ea := range a.entries {
		eb, ok := b.entries[id]
		switch {
		case !ok:
			c.Keys = append(c.Keys, KeyDiff{Change: OnlyInA, A: ea})
		default:
			d := KeyDiff{Change: Same, A: ea, B: eb, Differences: attributeDifferences(ea.Attributes, eb.Attributes)}
			if len(d.Differences) > 0 {
				d.Change = Changed
			}
			c.Keys = append(c.Keys, d)
		}
	}
	for id, eb := range b.entries {
		if _, ok := a.entries[id]; !ok {
			c.Keys = append(c.Keys, KeyDiff{Change: OnlyInB, B: eb})
		}
	}
	slices.SortFunc(c.Keys, func(x, y KeyDiff) int {
		ex, ey := x.Entry(), y.Entry()
		return cmp.Or(
			cmp.Compare(ex.Kind, ey.Kind),
			cmp.Compare(ex.Name, ey.Name),
			cmp.Compare(identity(ex.Kind, ex.Name, ex.Key), identity(ey.Kind, ey.Name, ey.Key)),
			cmp.Compare(verdictOrder[ex.Verdict], verdictOrder[ey.Verdict]),
		)
	})
	kinds := map[string]bool{}
	for k := range a.Kinds {
		kinds[k] = true
	}
	for k := range b.Kinds {
		kinds[k] = true
	}
	for _, k := range sortedKeys(kinds) {
		c.Kinds = append(c.Kinds, Total{Kind: k, A: a.Kinds[k], B: b.Kinds[k]})
	}
	c.Duration = Total{A: a.Duration, B: b.Duration}
	left := map[string]bool{}
	for _, k := range append(slices.Clone(a.LeftOut), b.LeftOut...) {
		left[k] = true
	}
	c.LeftOut = sortedKeys(left)
	return c
}

// verdictOrder is the order a diff lists a key's entries in: work
// first, then misses, then hits.
var verdictOrder = [...]int{Unknown: 0, Done: 1, Miss: 2, Hit: 3}

// attributeDifferences returns the attributes whose values differ, in key
// order.
func attributeDifferences(a, b sessions.Attrs) []Difference {
	keys := map[string]bool{}
	addKeys(keys, a, nil)
	addKeys(keys, b, nil)
	return differences(keys, a, b)
}

// Slowdown is a key whose records took longer on side B than on side A:
// their median wall grew by more than a share and by more than a
// duration.
type Slowdown struct {
	// Key is the key, recorded with the same verdict on both sides.
	Key *KeyDiff
	// A and B are the key's median walls on each side.
	A, B time.Duration
}

// Slower returns the keys both sides recorded, with the same verdict,
// whose median wall grew from side A to side B by more than pct percent
// of A's and by more than minDelta, in the comparison's order. Like is
// compared with like: a key's work with its work, its hits with its
// hits, so that two hits that took 3µs and 5µs, or a key recorded on one
// side only, are never slower. The totals (the duration, each kind's
// time) are not judged: a server's session lasts as long as the server
// ran, whatever its work took.
func (c Comparison) Slower(pct float64, minDelta time.Duration) []Slowdown {
	var out []Slowdown
	for i := range c.Keys {
		d := &c.Keys[i]
		if d.A == nil || d.B == nil {
			continue
		}
		a, b := d.A.Median, d.B.Median
		if a > 0 && b-a > minDelta && float64(b-a) > float64(a)*pct/100 {
			out = append(out, Slowdown{Key: d, A: a, B: b})
		}
	}
	return out
}
