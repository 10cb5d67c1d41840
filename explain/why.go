package explain

import (
	"cmp"
	"iter"
	"slices"
	"strings"

	"github.com/otelrecords/otelrecords/explain/internal/keyhistory"
	"github.com/otelrecords/otelrecords/sessions"
)

// Cause is why a record was done: the first of its key, the cache
// answering, or one of the reasons work already done was done again.
type Cause string

// The causes Why gives, in the order it tells them apart. A hit is
// Observed; every other record (work done, a miss, a record that does not
// say) has one of the others: a miss, though its own span changed
// nothing, is work done on its watch, and why it was done is asked of it
// as of any work (Reason.Verdict and Reason.Inside say it missed).
const (
	// Observed is a hit: a record that changed nothing, and inside which
	// nothing changed: the cache answered. A lookup that finds what an
	// earlier lookup of the key filled (the earlier one changed
	// something, or computed inside) is a hit.
	Observed Cause = "observed"
	// New is the first record of its key in the store.
	New Cause = "new"
	// NewHere is the first record of its key on its instance, when
	// another instance (InstanceKeys: another service.instance.id or
	// host.name) did the work before: each instance has a cache of its
	// own, and this one never held the key. Reason.Differences are the
	// instance keys that differ.
	NewHere Cause = "new_here"
	// Raced is work done while a record of the same key, in the same
	// session, was still running: requests that computed the key at once,
	// neither finding the other's work because it was not done yet.
	// Reason.AtOnce says how many; Reason.Previous is the one still
	// running that started last.
	Raced Cause = "raced"
	// Inputs is work done again because an input attribute differs from
	// the previous record of the key: the work asked was not the same.
	Inputs Cause = "inputs"
	// Environment is work done again with the same inputs, in a session
	// whose environment differs from the previous one's: another version
	// of the library, operating system or architecture, or another value
	// of a Resource attribute (service.version, say).
	Environment Cause = "environment"
	// Forgotten is work done again with the same inputs in the same
	// environment on the same instance: the cache lost what it had.
	Forgotten Cause = "forgotten"
)

// causes are the Causes of the rule's (keyhistory.Cause), but Again,
// which Why tells apart by comparing the records.
var causes = [...]Cause{keyhistory.Hit: Observed, keyhistory.New: New, keyhistory.NewHere: NewHere, keyhistory.Raced: Raced}

// Reason is a record and why it was done.
type Reason struct {
	sessions.KindRecord
	// Cause is why it was done.
	Cause Cause
	// Verdict is what it did: a hit, a miss, or work (see Verdict).
	Verdict Verdict
	// Inside is, for a miss, the first record inside it that changed
	// something; nil otherwise.
	Inside *sessions.KindRecord
	// Previous is the stamp of the record it was compared with: the
	// latest before it on its instance that did the work (not Observed),
	// else the latest before it there; for NewHere, the latest of another
	// instance; for Raced, the one still running that started last. Zero,
	// with HasPrevious false, for New.
	Previous    sessions.Stamp
	HasPrevious bool
	// AtOnce is, for Raced, how many records of the key were running when
	// this one started, this one included; 0 otherwise.
	AtOnce int
	// Differences are what differs from the previous record, in key
	// order: its inputs for Inputs, its session's environment for
	// Environment, the instance keys for NewHere; none otherwise.
	Differences []Difference
	// Outcome is, for work done again with the same inputs (Environment
	// and Forgotten), every outcome attribute (not an input) of either
	// record, in key order, with its value before (the previous record's)
	// and after (this one's), equal or not: a forgotten tune that picked
	// another winner, or the same one. None otherwise.
	Outcome []Difference
}

// OutcomeChanged reports whether an outcome attribute differs between the
// previous record and this one: the work done again did not come out the
// same.
func (r Reason) OutcomeChanged() bool {
	for _, d := range r.Outcome {
		if d.Before == nil || d.After == nil || !d.Before.Equal(*d.After) {
			return true
		}
	}
	return false
}

// Difference is one attribute, or one field of a session's environment,
// that differs between two records. A nil side has none.
type Difference struct {
	Key           string
	Before, After *sessions.Value
}

// Body reads what a record says of itself beyond its attributes: whether
// it changed anything (its effect), and which attributes its span started
// with (its inputs) rather than set while it ran (its outcome). Why and
// Rework ask a Body, so they can read records of any vintage.
type Body interface {
	// Effect returns the record's effect, and whether the record says.
	Effect(rec *sessions.Record) (effect sessions.Effect, known bool)
	// IsInput reports whether the attribute key of rec is an input.
	IsInput(rec *sessions.Record, key string) bool
}

// StoredBody is the Body of records as stores hold them.
//
// A record says its effect when it was written by a writer that stores
// effects: every record made from a span since records kept their span
// kind, effect and inputs (they came together) — a span of this process's
// SDK, or one imported through the Collector or pulled from a backend,
// whose span said records.effect=changed, or said nothing and so observed
// (the default). A record that is changed, or has inputs or a span kind,
// says; one with none of them (written before, or by code rather than
// from a span) does not: its effect is not known (Why then never answers
// Observed for it), whatever it did.
//
// Records made from spans of this process say which attributes the span
// started with (sessions.Record.Inputs), and StoredBody reads them;
// records that do not (older ones, and spans that crossed OTLP, which
// does not say) have every attribute taken for an input except the
// outcomes, those whose key, or its last dot-separated part, is one of
// OutcomeKeys (winner, autotune.winner, speedup, result, hit, ...).
var StoredBody Body = storedBody{}

// OutcomeKeys are the attribute names StoredBody takes for outcomes, not
// inputs, of a record that does not say which are which: what work
// found or produced, which differs from run to run without the work
// asked being any different.
var OutcomeKeys = []string{
	"winner", "result", "outcome", "status", "error", "speedup", "tried",
	"hit", "cached", "bytes", "size", "elapsed", "duration",
}

type storedBody struct{}

// Effect is the record's own when it says it: a changed record always
// does; an observed one does when it has inputs or a span kind (see
// StoredBody), since an older record reads as observed whatever it did.
func (storedBody) Effect(rec *sessions.Record) (sessions.Effect, bool) {
	if rec.Effect == sessions.Changed || rec.Inputs != nil || rec.SpanKind != "" {
		return rec.Effect, true
	}
	return sessions.Observed, false
}

// IsInput is the record's own list of the attributes its span started
// with, when it has one; for older records, every attribute but the
// OutcomeKeys.
func (storedBody) IsInput(rec *sessions.Record, key string) bool {
	if rec.Inputs != nil {
		return rec.IsInput(key)
	}
	last := key[strings.LastIndexByte(key, '.')+1:]
	return !slices.Contains(OutcomeKeys, last)
}

// VaryingResourceKeys are the Resource attributes that differ from one
// process to the next on one machine, and so say nothing of a session's
// environment: its process, and the instance of the service; keys under
// process.runtime. (the runtime's name and version) are environment.
var VaryingResourceKeys = []string{"process.", "service.instance.id", "records.session."}

func varies(key string) bool {
	if strings.HasPrefix(key, "process.runtime.") {
		return false
	}
	for _, v := range VaryingResourceKeys {
		if key == v || strings.HasSuffix(v, ".") && strings.HasPrefix(key, v) {
			return true
		}
	}
	return false
}

// Why yields every record of kind whose attribute key equals value, across
// sessions, oldest first — sessions in the order of their ids, a
// session's records in the order they started (not their seq: a gateway
// stamps concurrent requests in the order their traces came, so that
// every path a record took tells it the same) — each with why it was
// done (see Cause). Values
// are equal when they are, or when they read the same as text (the
// command line's 1024 finds an integer 1024). It reads records through
// StoredBody; WhyWith takes another Body.
func Why(r *sessions.Records, kind, key string, value sessions.Value) iter.Seq2[Reason, error] {
	return WhyWith(r, StoredBody, kind, key, value)
}

// WhyWith is Why, reading each record's effect and inputs through body.
//
// A record is Observed when it is a hit: body says it changed nothing,
// and no record inside it (by parent span, at any depth, of any kind)
// changed anything. Every other record is work (a miss — an observed
// record inside which a record changed something, Reason.Inside — among
// them), and is: New when no record of the key came before it; NewHere
// when none came before it on its instance (InstanceKeys), though another
// instance's did; Raced when a record of the key that did the work, in
// the same session, was still running when it started. Otherwise it is
// compared with the latest record of the key before it on its instance
// that did the work (or, when none did, the latest there): Inputs when an
// input attribute differs (an input of either record, absent on one side
// counting as a difference), Environment when the inputs agree but the
// sessions' environments differ (their version, os, arch, and Resource
// attributes but VaryingResourceKeys; a session without a row has no
// known environment, and differs in none), and Forgotten when neither
// differs.
//
// It reads the kind once, in stamp order, and the rows of the sessions it
// meets; to tell a hit from a miss, it reads the tree of each session with
// an observed record of the key (every kind of it, once). It holds, per
// instance, two records, the rows read, the records of the key in the
// session being read (to tell them in the order they started), and one
// session's tree. An error from the store ends the sequence with that
// error.
func WhyWith(r *sessions.Records, body Body, kind, key string, value sessions.Value) iter.Seq2[Reason, error] {
	return func(yield func(Reason, error) bool) {
		j := whyJudge{r: r, body: body, rows: map[sessions.SessionID]*sessions.Session{}}
		// The records of the key in the session being read, told once it
		// is read, in the order they started.
		var session []*sessions.KindRecord
		tell := func() bool {
			slices.SortStableFunc(session, func(a, b *sessions.KindRecord) int { return cmp.Compare(a.Stamp.Offset, b.Stamp.Offset) })
			for _, kr := range session {
				reason, err := j.reason(kr)
				if err != nil {
					yield(Reason{}, err)
					return false
				}
				if !yield(reason, nil) {
					return false
				}
			}
			clear(session)
			session = session[:0]
			return true
		}
		for rec, err := range r.All(kind) {
			if err != nil {
				yield(Reason{}, err)
				return
			}
			v, ok := rec.Record.Attributes.Get(key)
			if !ok || !(v.Equal(value) || v.String() == value.String()) {
				continue
			}
			if len(session) > 0 && session[0].Stamp.Session != rec.Stamp.Session && !tell() {
				return
			}
			session = append(session, &sessions.KindRecord{Kind: kind, Stamped: rec})
		}
		tell()
	}
}

// whyJudge is what Why holds while it reads: the history of the key, the
// instances and session rows met, and one session's tree.
type whyJudge struct {
	r     *sessions.Records
	body  Body
	h     keyhistory.History[*sessions.KindRecord]
	names instances
	rows  map[sessions.SessionID]*sessions.Session
	trees sessionTrees
}

// row returns the row of session id, nil when it has none, read once.
func (j *whyJudge) row(id sessions.SessionID) (*sessions.Session, error) {
	if s, ok := j.rows[id]; ok {
		return s, nil
	}
	s, ok, err := j.r.Session(id)
	if err != nil {
		return nil, err
	}
	var p *sessions.Session
	if ok {
		p = &s
	}
	j.rows[id] = p
	return p, nil
}

// reason says why kr was done, given after every record of the key
// before it (sessions in id order, a session's records in the order they
// started), and adds it to the history.
func (j *whyJudge) reason(kr *sessions.KindRecord) (Reason, error) {
	reason := Reason{KindRecord: *kr}
	var err error
	if reason.Verdict, reason.Inside, err = j.trees.verdict(j.r, j.body, *kr); err != nil {
		return Reason{}, err
	}
	after, err := j.row(kr.Stamp.Session)
	if err != nil {
		return Reason{}, err
	}
	jd := j.h.Judge(j.names.id(instanceOf(after)), uint64(kr.Stamp.Session), kr.Stamp.Offset, kr.Record.Wall, reason.Verdict == Hit, kr)
	reason.Cause, reason.AtOnce = causes[jd.Cause], jd.AtOnce
	if jd.HasPrev {
		reason.Previous, reason.HasPrevious = jd.Prev.Stamp, true
	}
	switch jd.Cause {
	case keyhistory.NewHere:
		before, err := j.row(jd.Prev.Stamp.Session)
		if err != nil {
			return Reason{}, err
		}
		reason.Differences = instanceDifferences(before, after)
	case keyhistory.Again:
		prev := jd.Prev
		if reason.Differences = inputDifferences(j.body, &prev.Record, &kr.Record); len(reason.Differences) > 0 {
			reason.Cause = Inputs
			break
		}
		before, err := j.row(prev.Stamp.Session)
		if err != nil {
			return Reason{}, err
		}
		if reason.Differences = environmentDifferences(before, after); len(reason.Differences) > 0 {
			reason.Cause = Environment
		} else {
			reason.Cause = Forgotten
		}
		reason.Outcome = outcomes(j.body, &prev.Record, &kr.Record)
	}
	return reason, nil
}

// sessionTrees reads the tree of the session of the records it is asked
// about, one session at a time.
type sessionTrees struct {
	kinds []string
	tree  *SessionTree
}

// verdict returns what kr did, read through body, and for a miss the
// first record inside it that changed something. An observed record needs
// its session's tree: the tree it holds, or the session's, read now.
func (ts *sessionTrees) verdict(r *sessions.Records, body Body, kr sessions.KindRecord) (Verdict, *sessions.KindRecord, error) {
	effect, known := body.Effect(&kr.Record)
	if !known || effect == sessions.Changed {
		return judge(effect, known, false), nil, nil
	}
	if ts.tree == nil || ts.tree.ID != kr.Stamp.Session {
		ts.tree = nil
		if ts.kinds == nil {
			kinds, err := r.Kinds()
			if err != nil {
				return Unknown, nil, err
			}
			ts.kinds = kinds
		}
		b := TreeBuilder{Body: body}
		for rec, err := range InStampOrder(r, kr.Stamp.Session, ts.kinds) {
			if err != nil {
				return Unknown, nil, err
			}
			if err := b.Add(rec); err != nil {
				return Unknown, nil, err
			}
		}
		ts.tree = b.Tree()
		ts.tree.ID = kr.Stamp.Session
	}
	n := ts.tree.BySeq(kr.Stamp.Seq)
	if n == nil {
		// Pruned since it was read: nothing inside it can be read either.
		return judge(effect, known, false), nil, nil
	}
	v := n.Verdict()
	if v != Miss {
		return v, nil, nil
	}
	inside, err := ts.tree.Record(r, ts.tree.ChangeInside(n))
	if err != nil {
		return v, nil, err
	}
	return v, &inside, nil
}

// inputDifferences returns the input attributes that differ between two
// records of a key, in key order.
func inputDifferences(body Body, before, after *sessions.Record) []Difference {
	keys := map[string]bool{}
	addKeys(keys, before.Attributes, func(k string) bool { return body.IsInput(before, k) })
	addKeys(keys, after.Attributes, func(k string) bool { return body.IsInput(after, k) })
	return differences(keys, before.Attributes, after.Attributes)
}

// outcomes returns every outcome attribute (not an input) of either of
// two records of a key, in key order, with both values, equal or not.
func outcomes(body Body, before, after *sessions.Record) []Difference {
	keys := map[string]bool{}
	addKeys(keys, before.Attributes, func(k string) bool { return !body.IsInput(before, k) })
	addKeys(keys, after.Attributes, func(k string) bool { return !body.IsInput(after, k) })
	out := make([]Difference, 0, len(keys))
	for _, k := range sortedKeys(keys) {
		vb, inb := before.Attributes.Get(k)
		va, ina := after.Attributes.Get(k)
		out = append(out, difference(k, vb, inb, va, ina))
	}
	return out
}

// environmentDifferences returns what differs between two sessions'
// environments, in key order: version, os and arch first, then the
// Resource attributes. Sessions without a row differ in nothing known.
func environmentDifferences(before, after *sessions.Session) []Difference {
	if before == nil || after == nil || before.ID == after.ID {
		return nil
	}
	var diffs []Difference
	for _, f := range []struct{ key, b, a string }{
		{"version", before.Version, after.Version},
		{"os", before.OS, after.OS},
		{"arch", before.Arch, after.Arch},
	} {
		if f.b != f.a {
			diffs = append(diffs, difference(f.key, sessions.StringValue(f.b), f.b != "", sessions.StringValue(f.a), f.a != ""))
		}
	}
	keys := map[string]bool{}
	environment := func(k string) bool { return !varies(k) }
	addKeys(keys, before.Resource, environment)
	addKeys(keys, after.Resource, environment)
	return append(diffs, differences(keys, before.Resource, after.Resource)...)
}

// addKeys adds to set the keys of attrs that keep accepts (every key when
// keep is nil).
func addKeys(set map[string]bool, attrs sessions.Attrs, keep func(string) bool) {
	for _, kv := range attrs {
		if keep == nil || keep(kv.Key) {
			set[kv.Key] = true
		}
	}
}

// differences returns, in key order, the keys whose values differ between
// two attribute lists, a key one of them lacks included.
func differences(keys map[string]bool, before, after sessions.Attrs) []Difference {
	var diffs []Difference
	for _, k := range sortedKeys(keys) {
		vb, inb := before.Get(k)
		va, ina := after.Get(k)
		if inb && ina && vb.Equal(va) {
			continue
		}
		diffs = append(diffs, difference(k, vb, inb, va, ina))
	}
	return diffs
}

func difference(key string, before sessions.Value, hasBefore bool, after sessions.Value, hasAfter bool) Difference {
	d := Difference{Key: key}
	if hasBefore {
		d.Before = &before
	}
	if hasAfter {
		d.After = &after
	}
	return d
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
