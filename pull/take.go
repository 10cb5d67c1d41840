package pull

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"time"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The bounds of what a pull remembers of the sessions it reads, so that
// what it holds does not follow what the query service sends. Each is a
// cache of what the stores say, or of what makes the pull faster
// (variables for the tests, which make them small).
var (
	// maxRowsKnown is how many sessions' rows a pull remembers (what the
	// store and the staging store hold of them); past it, it forgets them
	// all and reads them again.
	maxRowsKnown = 4096
	// maxStagedKnown is how many sessions a pull remembers it staged
	// something of (to count each once, without reading the staging
	// store); past it, it forgets them and reads the staging store.
	maxStagedKnown = 1 << 16
)

const (
	// maxSpansTracked is how many sessions' times the first pass of a
	// pull with Options.Match notes; past it, the second pass reads the
	// whole time range.
	maxSpansTracked = 1 << 16
	// maxMatching is how many sessions may match Options.Match.
	maxMatching = 1 << 18
)

// puller is one Pull under way.
type puller struct {
	j        *Jaeger
	r        *sessions.Records // the store pulled into, read only until commit
	stage    *sessions.Records // what the pull takes, until commit
	o        Options
	lim      answerLimits
	seed     maphash.Seed
	progress Progress
	read     answerCounts // of the answer being read

	cur  current                           // the ResourceSpans being read
	rows map[sessions.SessionID]*rowsKnown // what the stores hold of sessions' rows
	// staged remembers sessions the staging store holds something of (at
	// most maxStagedKnown), so that Progress.Sessions counts each once;
	// sessionsTaken counts them.
	staged        map[sessions.SessionID]bool
	stagedForgot  bool // staged is not all of them
	sessionsTaken int
	// Of sessions the store holds (so that these grow with the store,
	// not with what the query service sends): those labelled otherwise in
	// the backend, whose rows are written at the end, and those something
	// of which conflicts, whose rows are not.
	relabels   map[sessions.SessionID]sessions.Session
	conflicted map[sessions.SessionID]bool
	// another holds those whose row in the backend says they are
	// another session: nothing of them is taken, with a row or without.
	another map[sessions.SessionID]bool

	// The batch: rows and records to stage.
	batchRows []sessions.Session
	cands     []candidate
	candBytes int
	byStamp   map[stampKey]int // cands by kind and stamp

	// With Options.Match: the sessions that match, and the first and
	// last start of each session's spans, from the first pass.
	// The parts of tallies staged, with their counts, and the counts of
	// those parts the store holds (-1: none), read once (tally.go).
	tallies   map[tallyKey]int64
	tallyHeld map[tallyKey]int64

	matching  map[sessions.SessionID]bool
	spans     map[sessions.SessionID][2]time.Time
	spansLost bool // more sessions than maxSpansTracked
}

// current is what the pull made of the Resource of the ResourceSpans
// being read, which its spans follow.
type current struct {
	id   sessions.SessionID
	what spanFate
}

// spanFate says what becomes of the spans of a Resource.
type spanFate int

const (
	fateTake      spanFate = iota // records, taken
	fateNotRecord                 // no session's
	fateRefused                   // a session id no Recorder gives
	fateConflict                  // a session whose row the stores hold otherwise
	fateSkip                      // a session Match did not choose
)

// resource reads a Resource: whose session its spans are, and, on the
// second pass, its row, which is taken unless it conflicts.
func (p *puller) resource(attrs []keyValue, take bool) error {
	p.cur = current{}
	session, isRow, err := spanbridge.FromResource(attributes(attrs))
	switch {
	case errors.Is(err, spanbridge.ErrNotRecord):
		p.cur.what = fateNotRecord
		return nil
	case !recorder.ValidID(session.ID):
		p.cur.what = fateRefused
		return nil
	}
	p.cur.id = session.ID
	if !take {
		return nil
	}
	if p.matching != nil && !p.matching[session.ID] {
		p.cur.what = fateSkip
		return nil
	}
	if !isRow {
		if p.another[session.ID] {
			p.cur.what = fateConflict // records without a row, of the other session
		}
		return nil
	}
	corrected := false
	if !recorder.Plausible(time.UnixMilli(session.StartedUnixMs)) {
		session.StartedUnixMs, corrected = session.Started().UnixMilli(), true
	}
	ok, staged, err := p.takeRow(session)
	if err != nil {
		return err
	}
	if !ok {
		p.cur.what = fateConflict // its records are counted as they are read
		p.read.conflictSessions = noteConflicts(p.read.conflictSessions, session.ID)
	} else if corrected && staged {
		p.progress.Corrected++ // a row is staged once: counted as it is
	}
	return nil
}

// rowSig is what a pull remembers of a session row: whether there is
// one, and hashes of what identifies the session (all of it but its
// label: its start, process, host, version and Resource, which do not
// change while it runs) and of the whole row (a session's label may:
// Recorder.Label).
type rowSig struct {
	has         bool
	ident, full uint64
	size        int // of the row, encoded
}

// rowsKnown is what the store pulled into and the staging store hold of
// a session's row.
type rowsKnown struct{ store, stage rowSig }

func (p *puller) sig(s sessions.Session) (rowSig, error) {
	full, err := s.MarshalCBOR()
	if err != nil {
		return rowSig{}, err
	}
	s.Label = ""
	ident, err := s.MarshalCBOR()
	if err != nil {
		return rowSig{}, err
	}
	return rowSig{has: true, ident: maphash.Bytes(p.seed, ident), full: maphash.Bytes(p.seed, full), size: len(full)}, nil
}

// takeRow queues the row of a session unless the stores hold it already,
// and says whether it did; ok is false when they hold another one:
// another session under its id.
func (p *puller) takeRow(row sessions.Session) (ok, queued bool, err error) {
	known, err := p.rowsOf(row.ID)
	if err != nil {
		return false, false, err
	}
	sig, err := p.sig(row)
	if err != nil {
		return false, false, err
	}
	held := known.store
	if known.stage.has {
		held = known.stage // staged over the store's: the same session
	}
	switch {
	case held.has && held.ident != sig.ident:
		if !known.stage.has {
			p.conflicted[row.ID], p.another[row.ID] = true, true
		}
		return false, false, nil
	case held.has && held.full == sig.full:
		return true, false, nil
	case known.store.has && !known.stage.has:
		// The store's session, labelled otherwise since: the label is
		// taken at the end, unless something of the session conflicts
		// (then it is another session's, or the backend's change).
		p.relabels[row.ID] = row
		return true, false, nil
	}
	// New, or labelled otherwise since this pull read it (the later one
	// read wins, as a session's later row does).
	known.stage = sig
	p.batchRows = append(p.batchRows, row)
	// Rows count in the batch as records do: an answer of rows alone is
	// staged a batch at a time too.
	if p.candBytes += sig.size; len(p.batchRows) >= putBatch || p.candBytes >= maxBatchBytes {
		return true, true, p.flush()
	}
	return true, true, nil
}

// rowsOf returns what the stores hold of a session's row, read once.
func (p *puller) rowsOf(id sessions.SessionID) (*rowsKnown, error) {
	if k, ok := p.rows[id]; ok {
		return k, nil
	}
	if len(p.rows) >= maxRowsKnown {
		clear(p.rows)
	}
	k := &rowsKnown{}
	for _, side := range []struct {
		r   *sessions.Records
		sig *rowSig
	}{{p.r, &k.store}, {p.stage, &k.stage}} {
		row, ok, err := side.r.Session(id)
		if err != nil {
			return nil, err
		}
		if ok {
			if *side.sig, err = p.sig(row); err != nil {
				return nil, err
			}
		}
	}
	// A row queued and not yet staged is the stage's.
	for _, row := range p.batchRows {
		if row.ID == id {
			sig, err := p.sig(row)
			if err != nil {
				return nil, err
			}
			k.stage = sig
		}
	}
	p.rows[id] = k
	return k, nil
}

// findSink is what the first pass of a pull with Options.Match hands
// spans to: it notes which sessions match, and when each session's spans
// start.
func (p *puller) findSink() traceSink {
	return traceSink{
		resource: func(attrs []keyValue) error { return p.resource(attrs, false) },
		span: func(s *span) error {
			if p.cur.what == fateTake && spanbridge.IsTallySpan(s.SpanName, s.Attributes()) {
				// At its session's start, which may be before its first
				// record's: the second pass reads from it.
				p.read.spans++
				p.noteStart(p.cur.id, s.StartTime())
				return nil
			}
			kind, rec, ok := p.record(s)
			if !ok {
				return nil
			}
			id := rec.Stamp.Session
			p.noteStart(id, s.StartTime())
			if !p.matching[id] && p.o.Match(kind, rec.Record) {
				if len(p.matching) >= maxMatching {
					return fmt.Errorf("more than %d sessions match: pull fewer at a time (a narrower time range, services)", maxMatching)
				}
				p.matching[id] = true
			}
			return nil
		},
		stepped: p.stepped,
	}
}

// noteStart notes that a span of session id starts at start.
func (p *puller) noteStart(id sessions.SessionID, start time.Time) {
	span, ok := p.spans[id]
	if !ok && len(p.spans) >= maxSpansTracked {
		p.spansLost = true
		return
	}
	if !ok || start.Before(span[0]) {
		span[0] = start
	}
	if start.After(span[1]) {
		span[1] = start
	}
	p.spans[id] = span
}

// matchingSpan returns the first and last start of the matching
// sessions' spans.
func (p *puller) matchingSpan() (from, to time.Time) {
	for id := range p.matching {
		span := p.spans[id]
		if from.IsZero() || span[0].Before(from) {
			from = span[0]
		}
		if span[1].After(to) {
			to = span[1]
		}
	}
	return from, to
}

// takeSink is what the pull hands spans to: it queues the records the
// stores do not hold, and stages them a batch at a time.
func (p *puller) takeSink() traceSink {
	return traceSink{
		resource: func(attrs []keyValue) error { return p.resource(attrs, true) },
		span: func(s *span) error {
			if ok, err := p.tally(s); ok || err != nil {
				return err
			}
			kind, rec, ok := p.record(s)
			if !ok {
				return nil
			}
			switch p.cur.what {
			case fateSkip:
				return nil
			case fateConflict:
				p.read.conflicts++
				return nil
			}
			corrected := p.correct(s, &rec)
			return p.queue(kind, rec, corrected)
		},
		stepped: p.stepped,
	}
}

// stepped counts a span past the span limit.
func (p *puller) stepped([16]byte, bool) error {
	p.read.spans++
	p.read.tooLarge++
	return nil
}

// record returns the record a span carries, counting the span, and what
// it carries when it is none, or is refused.
func (p *puller) record(s *span) (string, sessions.Stamped[sessions.Record], bool) {
	p.read.spans++
	var none sessions.Stamped[sessions.Record]
	switch p.cur.what {
	case fateNotRecord:
		p.read.notRecords++
		return "", none, false
	case fateRefused:
		p.read.refused++
		return "", none, false
	}
	kind, rec, err := spanbridge.FromSpan(p.cur.id, s)
	if err != nil {
		p.read.notRecords++
		return "", none, false
	}
	if rec.Stamp.Seq > math.MaxInt64 {
		p.read.refused++ // a negative records.seq: no record's
		return "", none, false
	}
	return kind, rec, true
}

// correct applies the Collector's rules to the times of the span a record
// was read from (recorder.SpanTimes): a span of no plausible time is
// placed at its session's start. It reports whether it changed them; the
// record then keeps the span's own (spanbridge.SenderTimes).
func (p *puller) correct(s *span, rec *sessions.Stamped[sessions.Record]) bool {
	start, end, own, found := recorder.SpanTimes(s.StartTime(), s.EndTime(), recorder.Plausible)
	if own {
		return false
	}
	began := sessions.Session{ID: rec.Stamp.Session}.Started()
	if !found {
		start, end = began, began
	}
	rec.Stamp.Offset = start.Sub(began)
	rec.Record.Wall = end.Sub(start)
	rec.Record.Attributes = append(rec.Record.Attributes, spanbridge.SenderTimes(s.StartTime(), s.EndTime())...)
	return true
}
