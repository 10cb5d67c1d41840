package pull

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// DefaultPageTraces is how many traces one query asks for. A time window
// whose answer holds as many may hold more, and is asked for again in two
// halves, until every answer holds fewer: Jaeger's api_v3 has no pages.
const DefaultPageTraces = 1000

// putBatch is how many records are written to the store at a time (a
// variable for the tests, which make batches small).
var putBatch = 1024

// Options say what to pull. The zero Options pull every session of every
// service the query service knows, whenever its spans started.
type Options struct {
	// Services are the services whose traces are read (service.name); all
	// those the query service knows when empty. A service it does not know
	// is an error.
	Services []string
	// Since and Until bound when spans started, both included: the
	// traces with a span that started between them are pulled, whole, as
	// Jaeger finds traces. A zero Since is the Unix epoch (records keep
	// their original times: a session replayed today may have started
	// last year); a zero Until is a day from now (a clock a little ahead).
	Since, Until time.Time
	// Match, when not nil, chooses sessions: a session is pulled, whole,
	// when Match is true for one of its records. The traces are then read
	// twice: once to learn which sessions match, once (within the time
	// their spans cover) to pull them; nothing but their ids and times is
	// held in between.
	Match func(kind string, rec sessions.Record) bool
	// PageTraces is how many traces one query asks for; DefaultPageTraces
	// when 0. It must not exceed what the query service allows (the
	// memory storage's max_traces, say).
	PageTraces int
	// Progress, when not nil, is called after each query with how far the
	// pull got.
	Progress func(Progress)
}

// Progress is how far a pull got.
type Progress struct {
	// Queries is how many queries the query service answered.
	Queries int
	// Spans is how many spans were read; NotRecords of them carried no
	// record (spans that did not come from a replay or the records
	// processor: records.session.id, records.kind and records.seq say one
	// did). A trace with spans in two time windows is counted in each.
	Spans, NotRecords int
	// Sessions is how many sessions the pull wrote something of: records,
	// or a row the store did not have.
	Sessions int
	// Records is how many records the pull wrote; Present how many it read
	// that the store held already (pulled before, or read twice: a
	// backend holds a session replayed twice twice), and did not write.
	Records, Present int
	// TooLarge is how many records and session rows it read that no
	// store takes (larger than a writer writes, or than a reader decodes:
	// sessions.ErrTooLarge), which it stepped over rather than write for
	// every reader to skip. A session whose row was stepped over has its
	// records without it.
	TooLarge int
}

// Pull reads, from the Jaeger query service j, the records the options
// select, and writes those the store r reads does not hold yet into it,
// with their original session ids, seqs and offsets, and the rows of their
// sessions (sessions.Records.Put): a session that replay (or the records
// processor) sent there comes back as it was in the store it came from.
// A record the store holds (the same session and seq) is not written
// again, so pulling again writes only what is new: sessions kept since,
// or traces a long-running server session has kept since.
//
// Spans that carry no record are counted and stepped over. It returns how
// far it got, which on error is what it wrote before the error.
func Pull(ctx context.Context, j *Jaeger, r *sessions.Records, o Options) (Progress, error) {
	if o.PageTraces <= 0 {
		o.PageTraces = DefaultPageTraces
	}
	if o.Since.IsZero() {
		o.Since = time.Unix(0, 0)
	}
	if o.Until.IsZero() {
		o.Until = time.Now().Add(24 * time.Hour)
	}
	if o.Until.Before(o.Since) {
		return Progress{}, fmt.Errorf("the time range ends (%v) before it starts (%v)", o.Until, o.Since)
	}
	known, err := j.Services(ctx)
	if err != nil {
		return Progress{}, err
	}
	services := o.Services
	if len(services) == 0 {
		services = known
	}
	for _, s := range services {
		if !slices.Contains(known, s) {
			return Progress{}, fmt.Errorf("%s knows no service %q (it knows %d: %q)", j, s, len(known), known)
		}
	}
	counts, err := r.Counts()
	if err != nil {
		return Progress{}, err
	}
	p := &puller{j: j, r: r, o: o, local: counts, state: map[sessions.SessionID]*sessionState{}}
	from, to := o.Since, o.Until
	if o.Match != nil {
		// First pass: which sessions match, and when their spans start.
		p.matching = map[sessions.SessionID]bool{}
		p.spans = map[sessions.SessionID][2]time.Time{}
		for _, service := range services {
			if err := p.walk(ctx, service, from, to, p.find); err != nil {
				return p.progress, err
			}
		}
		if len(p.matching) == 0 {
			return p.progress, nil
		}
		from, to = time.Time{}, time.Time{}
		for id := range p.matching {
			span := p.spans[id]
			if from.IsZero() || span[0].Before(from) {
				from = span[0]
			}
			if span[1].After(to) {
				to = span[1]
			}
		}
	}
	for _, service := range services {
		if err := p.walk(ctx, service, from, to, p.take); err != nil {
			return p.progress, err
		}
	}
	return p.progress, p.flush()
}

// puller is one Pull under way.
type puller struct {
	j        *Jaeger
	r        *sessions.Records
	o        Options
	local    map[sessions.SessionID]map[string]int // what the store held of each session before
	state    map[sessions.SessionID]*sessionState
	progress Progress

	// With Options.Match: the sessions that match, and the first and
	// last start of each session's spans, from the first pass.
	matching map[sessions.SessionID]bool
	spans    map[sessions.SessionID][2]time.Time

	rows    []sessions.Session
	records []sessions.KindRecord
	read    readCounts // of the answer being read
}

// readCounts counts the spans of one answer.
type readCounts struct{ spans, notRecords int }

// sessionState is what a pull knows of a session it has read records of.
type sessionState struct {
	seqs    seqSet // the seqs the store holds, or this pull has queued
	rowDone bool   // its row is in the store as pulled, or was queued
	wrote   bool   // this pull wrote something of it
}

// walk reads the traces of service with a span starting in [from, to],
// a window at a time, oldest first, and hands every ResourceSpans to
// each. A window whose answer is full is read again in two halves (what
// each was handed then comes again, and each must take it twice); a
// window of one instant, in which more traces start than a page holds,
// is read again with a page twice as large.
func (p *puller) walk(ctx context.Context, service string, from, to time.Time, each func(*resourceSpans) error) error {
	type window struct {
		from, to time.Time
		page     int
	}
	windows := []window{{from, to, p.o.PageTraces}}
	for len(windows) > 0 {
		w := windows[len(windows)-1]
		windows = windows[:len(windows)-1]
		if err := ctx.Err(); err != nil {
			return err
		}
		p.read = readCounts{}
		a, err := p.j.findTraces(ctx, service, w.from, w.to, w.page, each)
		if err != nil {
			return err
		}
		p.progress.Queries++
		if a.traces < w.page {
			// Spans are counted from the answers no window replaces.
			p.progress.Spans += p.read.spans
			p.progress.NotRecords += p.read.notRecords
		}
		if p.o.Progress != nil {
			p.o.Progress(p.progress)
		}
		if a.traces < w.page {
			continue
		}
		if w.to.Sub(w.from) <= 0 {
			if w.page > math.MaxInt32/2 {
				return fmt.Errorf("%s: %d traces or more of %s start at %s", p.j, a.traces, service, w.from.UTC().Format(time.RFC3339Nano))
			}
			windows = append(windows, window{w.from, w.to, 2 * w.page})
			continue
		}
		// Split where the traces found start (the middle one's first span
		// in the window), so that the empty stretches of a wide window
		// cost a query each, not one a halving; else in the middle.
		mid := a.middle
		switch {
		case mid.Before(w.from):
			mid = w.from.Add(w.to.Sub(w.from) / 2)
		case !mid.Before(w.to):
			mid = w.to.Add(-time.Nanosecond) // the window's last instant, alone
		}
		// The later half first on the stack, so the earlier is read first.
		windows = append(windows, window{mid.Add(time.Nanosecond), w.to, w.page}, window{w.from, mid, w.page})
	}
	return nil
}

// eachRecord calls fn with every record of a ResourceSpans, its session's
// id, and its row (nil when the Resource says the row is gone), counting
// the spans and those that are no record.
func (p *puller) eachRecord(rs *resourceSpans, fn func(row *sessions.Session, kind string, rec sessions.Stamped[sessions.Record], start time.Time) error) error {
	n := 0
	for _, ss := range rs.ScopeSpans {
		n += len(ss.Spans)
	}
	p.read.spans += n
	session, isRow, err := spanbridge.FromResource(attributes(rs.Resource.Attributes))
	if errors.Is(err, spanbridge.ErrNotRecord) {
		p.read.notRecords += n
		return nil
	}
	var row *sessions.Session
	if isRow {
		row = &session
	}
	for _, ss := range rs.ScopeSpans {
		for _, s := range ss.Spans {
			kind, rec, err := spanbridge.FromSpan(session.ID, s)
			if err != nil {
				p.read.notRecords++
				continue
			}
			if err := fn(row, kind, rec, s.StartTime()); err != nil {
				return err
			}
		}
	}
	return nil
}

// find is the first pass of a pull with Options.Match: it notes which
// sessions match, and when each session's spans start.
func (p *puller) find(rs *resourceSpans) error {
	return p.eachRecord(rs, func(_ *sessions.Session, kind string, rec sessions.Stamped[sessions.Record], start time.Time) error {
		id := rec.Stamp.Session
		span, ok := p.spans[id]
		if !ok || start.Before(span[0]) {
			span[0] = start
		}
		if start.After(span[1]) {
			span[1] = start
		}
		p.spans[id] = span
		if !p.matching[id] && p.o.Match(kind, rec.Record) {
			p.matching[id] = true
		}
		return nil
	})
}

// take queues the records the store does not hold, and their rows, and
// writes them a batch at a time.
func (p *puller) take(rs *resourceSpans) error {
	return p.eachRecord(rs, func(row *sessions.Session, kind string, rec sessions.Stamped[sessions.Record], _ time.Time) error {
		id := rec.Stamp.Session
		if p.matching != nil && !p.matching[id] {
			return nil
		}
		st, err := p.session(id)
		if err != nil {
			return err
		}
		if row != nil && !st.rowDone {
			st.rowDone = true
			if have, ok, err := p.r.Session(id); err != nil {
				return err
			} else if !ok || !reflect.DeepEqual(have, *row) {
				p.rows = append(p.rows, *row)
			}
		}
		if st.seqs.has(rec.Stamp.Seq) {
			p.progress.Present++
			return nil
		}
		st.seqs.add(rec.Stamp.Seq)
		p.records = append(p.records, sessions.KindRecord{Kind: kind, Stamped: rec})
		if len(p.records) >= putBatch {
			return p.flush()
		}
		return nil
	})
}

// wrote counts session id among those the pull wrote something of.
func (p *puller) wrote(id sessions.SessionID) {
	if st := p.state[id]; !st.wrote {
		st.wrote = true
		p.progress.Sessions++
	}
}

// session returns what the pull knows of a session, learning the seqs
// the store holds of it the first time (a seek per kind; nothing for a
// session the store has no record of).
func (p *puller) session(id sessions.SessionID) (*sessionState, error) {
	if st, ok := p.state[id]; ok {
		return st, nil
	}
	st := &sessionState{}
	if len(p.local[id]) > 0 {
		for stamp, err := range p.r.Stamps(sessions.InSession(id)) {
			if err != nil {
				return nil, err
			}
			st.seqs.add(stamp.Seq)
		}
	}
	p.state[id] = st
	return st, nil
}

// flush writes the queued rows and records.
func (p *puller) flush() error {
	if len(p.rows) == 0 && len(p.records) == 0 {
		return nil
	}
	err := p.r.Put(p.rows, p.records)
	if errors.Is(err, sessions.ErrTooLarge) {
		err = p.putEach()
	} else if err == nil {
		p.progress.Records += len(p.records)
		for _, row := range p.rows {
			p.wrote(row.ID)
		}
		for _, kr := range p.records {
			p.wrote(kr.Stamp.Session)
		}
	}
	if err != nil {
		return err
	}
	clear(p.records) // let the records go
	p.rows, p.records = p.rows[:0], p.records[:0]
	return nil
}

// putEach writes the queued rows, then the queued records, one at a
// time, stepping over (and counting) those no store takes: spans in the
// backend that map to a row or record larger than a writer writes, or
// than a reader decodes, which a reader would skip. It is the slow way,
// taken only when a batch was refused for one. A session whose row is
// refused gets its records without it, as a session whose row was
// pruned has them.
func (p *puller) putEach() error {
	for i, row := range p.rows {
		err := p.r.Put(p.rows[i:i+1], nil)
		switch {
		case errors.Is(err, sessions.ErrTooLarge):
			p.progress.TooLarge++
		case err != nil:
			return err
		default:
			p.wrote(row.ID)
		}
	}
	for i, kr := range p.records {
		err := p.r.Put(nil, p.records[i:i+1])
		switch {
		case errors.Is(err, sessions.ErrTooLarge):
			// Not in the store: a second copy of the span is refused
			// again, not counted as present.
			p.state[kr.Stamp.Session].seqs.remove(kr.Stamp.Seq)
			p.progress.TooLarge++
		case err != nil:
			return err
		default:
			p.progress.Records++
			p.wrote(kr.Stamp.Session)
		}
	}
	return nil
}

// seqSet is a set of seqs: a bitmap for the small ones, which a session's
// seqs are (0, 1, 2, ... with gaps), a map for the rest.
type seqSet struct {
	bits  []uint64
	large map[uint64]struct{}
}

// maxBitmapSeq bounds the bitmap: 16M seqs, 2 MiB a session at most.
const maxBitmapSeq = 1 << 24

func (s *seqSet) has(seq uint64) bool {
	if seq < maxBitmapSeq {
		i := seq / 64
		return i < uint64(len(s.bits)) && s.bits[i]&(1<<(seq%64)) != 0
	}
	_, ok := s.large[seq]
	return ok
}

func (s *seqSet) add(seq uint64) {
	if seq < maxBitmapSeq {
		i := seq / 64
		if i >= uint64(len(s.bits)) {
			s.bits = slices.Grow(s.bits, int(i+1)-len(s.bits))[:i+1]
		}
		s.bits[i] |= 1 << (seq % 64)
		return
	}
	if s.large == nil {
		s.large = map[uint64]struct{}{}
	}
	s.large[seq] = struct{}{}
}

func (s *seqSet) remove(seq uint64) {
	if seq < maxBitmapSeq {
		if i := seq / 64; i < uint64(len(s.bits)) {
			s.bits[i] &^= 1 << (seq % 64)
		}
		return
	}
	delete(s.large, seq)
}
