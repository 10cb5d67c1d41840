package pull

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// The defaults of what a pull asks and reads (Options). A query service is
// read as untrusted input: whatever it sends, a pull ends, and holds a
// bounded amount of memory.
const (
	// DefaultPageTraces is how many traces one query asks for. A time
	// window whose answer holds as many may hold more, and is asked for
	// again in two halves, until every answer holds fewer: Jaeger's
	// api_v3 has no pages.
	DefaultPageTraces = 1000
	// DefaultMaxQueries is how many queries one pull may ask: enough for
	// some three million traces at DefaultPageTraces a query. A pull that
	// needs more (or a query service whose every answer is full) ends with
	// an error matching ErrTooManyQueries.
	DefaultMaxQueries = 10_000
	// DefaultMaxAnswerBytes is the largest answer a pull reads: an answer
	// larger ends the pull with an error matching ErrAnswerTooLarge.
	DefaultMaxAnswerBytes = 1 << 30
	// DefaultAnswerTimeout is how long a pull waits for an answer, from
	// asking to its last byte read (its spans staged, a batch at a time,
	// as they are read): a query service that sends slowly, or never ends
	// its answer, ends the pull with an error matching ErrAnswerTimeout.
	DefaultAnswerTimeout = 30 * time.Second
	// DefaultMaxSpanBytes is the largest span (in OTLP JSON) a pull
	// reads; a larger one is stepped over and counted (Progress.TooLarge).
	// A Resource or scope larger ends the pull (ErrAnswerTooLarge). With
	// it, what a pull holds of an answer is bounded whatever the answer.
	DefaultMaxSpanBytes = 8 << 20
)

// maxPageTraces bounds how many traces a query may ask for: a window of
// one instant holding more traces than a page is asked for again with a
// page twice as large, up to this (a variable for the tests).
var maxPageTraces = 1 << 15

// putBatch is how many records are written to the store at a time (a
// variable for the tests, which make batches small); maxBatchBytes bounds
// their size (in OTLP JSON, about what they hold decoded).
var (
	putBatch      = 1024
	maxBatchBytes = 8 << 20
)

// Options say what to pull, and bound what a pull asks and reads. The
// zero Options pull every session of every service the query service
// knows, whenever its spans started, within the Default limits.
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
	// held in between (for at most 65,536 sessions: past that, the second
	// pass reads the whole range again; and at most 262,144 matching
	// sessions, past which the pull ends with an error).
	Match func(kind string, rec sessions.Record) bool
	// PageTraces is how many traces one query asks for; DefaultPageTraces
	// when 0. It must not exceed what the query service allows (the
	// memory storage's max_traces, say), nor 32,768.
	PageTraces int
	// MaxQueries bounds how many queries the pull asks; DefaultMaxQueries
	// when 0.
	MaxQueries int
	// MaxAnswerBytes bounds the size of one answer;
	// DefaultMaxAnswerBytes when 0.
	MaxAnswerBytes int64
	// AnswerTimeout bounds how long one answer takes, from the request to
	// its last byte; DefaultAnswerTimeout when 0. An http.Client's
	// Timeout, when shorter, bounds it too.
	AnswerTimeout time.Duration
	// MaxSpanBytes bounds the size of one span, Resource or scope of an
	// answer; DefaultMaxSpanBytes when 0.
	MaxSpanBytes int
	// Staging is where the pull writes what it takes until it has read
	// everything: it is copied into the store only when the pull ends
	// without error, so that a pull cut off (by a limit, an error, its
	// context) writes nothing into the store. It must hold nothing; nil is
	// a store in memory, which then holds what the pull takes until it
	// ends. (The records command stages in a Badger store on disk beside
	// the one it pulls into.)
	Staging sessions.Store
	// Progress, when not nil, is called after each query with how far the
	// pull got.
	Progress func(Progress)
}

// Progress is how far a pull got, and what it made of what it read. A
// window read again in halves (its answer was full) is counted from the
// halves only.
type Progress struct {
	// Queries is how many queries the query service answered.
	Queries int
	// Spans is how many spans were read; NotRecords of them carried no
	// record (spans that did not come from a replay or the records
	// processor: records.session.id, records.kind and records.seq say one
	// did). A trace with spans in two time windows is counted in each.
	Spans, NotRecords int
	// Taken is how many records, new to the store, the pull has taken so
	// far, and will write when it ends.
	Taken int
	// Sessions and Records are how many sessions the pull wrote something
	// of (records, or a row the store did not have) and how many records
	// it wrote: 0 until the pull ends without error, and on error.
	Sessions, Records int
	// Present is how many records read the store held already, the same
	// (pulled before), which were not written again.
	Present int
	// Repeated is how many records read this pull had read before (a
	// window read again in halves, a trace in two windows, a span the
	// backend holds twice), which it took once.
	Repeated int
	// TooLarge is how many records and session rows it read that no
	// store takes (larger than a writer writes, or than a reader decodes:
	// sessions.ErrTooLarge), and spans past Options.MaxSpanBytes, which it
	// stepped over rather than write for every reader to skip. A session
	// whose row was stepped over has its records without it.
	TooLarge int
	// Refused is how many spans it refused as implausible: of a session
	// whose id no Recorder gives (recorder.ValidID: 0, past 2262), or with
	// a negative seq (which no record has).
	Refused int
	// Corrected is how many records and rows it took with times it
	// corrected, by the rules the Collector applies to its senders
	// (recorder.SpanTimes): a span starting in 1970 or before, ending
	// before its start or more than a week after it (the record keeps the
	// span's own times in spanbridge.SpanStartKey and SpanEndKey); a row
	// starting at no plausible time (it then starts at its id's instant).
	Corrected int
	// Conflicts is how many records it read that the store (or this
	// pull) holds with other content: another record under the same
	// session and seq, or a session whose row says it is another session
	// (another start, process, host, version or Resource) — another
	// session under the same id, or a backend that changed what it was
	// sent. The store's are kept, and nothing of a session whose row
	// conflicts is taken. ConflictSessions names the first sessions in
	// conflict, by their row or their records (at most 8).
	Conflicts        int
	ConflictSessions []sessions.SessionID
	// Tallies is how many parts of sessions' tallies (counts of what a
	// kept session let go, docs/MAPPING.md §8.6) it wrote: those that
	// count more than the part the store held. 0 until the pull ends
	// without error.
	Tallies int
}

// maxConflictSessions is how many conflicting sessions Progress names.
const maxConflictSessions = 8

// noteConflicts adds ids to list, up to maxConflictSessions, once each.
func noteConflicts(list []sessions.SessionID, ids ...sessions.SessionID) []sessions.SessionID {
	for _, id := range ids {
		if len(list) < maxConflictSessions && !slices.Contains(list, id) {
			list = append(list, id)
		}
	}
	return list
}

// Pull reads, from the Jaeger query service j, the records the options
// select, and writes those the store r reads does not hold yet into it,
// with their original session ids, seqs and offsets, and the rows of their
// sessions (sessions.Records.Put): a session that replay (or the records
// processor) sent there comes back as it was in the store it came from.
// A record the store holds (the same session and seq, the same content)
// is not written again, so pulling again writes only what is new:
// sessions kept since, or traces a long-running server session has kept
// since. One it holds with other content is a conflict (Progress).
//
// The query service is untrusted: what it sends is bounded (Options'
// limits), and judged by the rules the Collector applies to its senders
// (Progress.Refused, Corrected). Spans that carry no record are counted
// and stepped over.
//
// Nothing is written into r until everything has been read (Staging):
// on error, nothing was, and the Progress returned says how far the pull
// got.
func Pull(ctx context.Context, j *Jaeger, r *sessions.Records, o Options) (Progress, error) {
	o = o.withDefaults()
	switch {
	case o.Until.Before(o.Since):
		return Progress{}, fmt.Errorf("the time range ends (%v) before it starts (%v)", o.Until, o.Since)
	case o.PageTraces > maxPageTraces:
		return Progress{}, fmt.Errorf("a page of %d traces: at most %d", o.PageTraces, maxPageTraces)
	}
	known, err := j.services(ctx, o.AnswerTimeout)
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
	stage := o.Staging
	if stage == nil {
		stage = sessions.NewMemStore()
	}
	if err := empty(sessions.NewRecords(stage)); err != nil {
		return Progress{}, err
	}
	p := &puller{j: j, r: r, stage: sessions.NewRecords(stage), o: o, seed: maphash.MakeSeed(),
		lim:  answerLimits{timeout: o.AnswerTimeout, bytes: o.MaxAnswerBytes, span: o.MaxSpanBytes},
		rows: map[sessions.SessionID]*rowsKnown{}, staged: map[sessions.SessionID]bool{},
		relabels: map[sessions.SessionID]sessions.Session{}, conflicted: map[sessions.SessionID]bool{},
		another: map[sessions.SessionID]bool{}}
	from, to := o.Since, o.Until
	if o.Match != nil {
		// First pass: which sessions match, and when their spans start.
		p.matching = map[sessions.SessionID]bool{}
		p.spans = map[sessions.SessionID][2]time.Time{}
		for _, service := range services {
			if err := p.walk(ctx, service, from, to, p.findSink()); err != nil {
				return p.failed(err)
			}
		}
		if len(p.matching) == 0 {
			return p.progress, nil
		}
		if !p.spansLost {
			from, to = p.matchingSpan()
		}
	}
	for _, service := range services {
		if err := p.walk(ctx, service, from, to, p.takeSink()); err != nil {
			return p.failed(err)
		}
	}
	if err := p.commit(); err != nil {
		return p.progress, err
	}
	return p.progress, nil
}

// empty checks that the staging store holds nothing, which the pull
// would write into the store.
func empty(stage *sessions.Records) error {
	kinds, err := stage.Kinds()
	if err != nil {
		return fmt.Errorf("the staging store: %w", err)
	}
	rows := false
	for _, err := range stage.Sessions() {
		if err != nil {
			return fmt.Errorf("the staging store: %w", err)
		}
		rows = true
		break
	}
	if len(kinds) > 0 || rows {
		return errors.New("the staging store must hold nothing: it is written into the store at the end")
	}
	return nil
}

// withDefaults fills in the limits left 0, and the time range.
func (o Options) withDefaults() Options {
	if o.PageTraces <= 0 {
		o.PageTraces = DefaultPageTraces
	}
	if o.MaxQueries <= 0 {
		o.MaxQueries = DefaultMaxQueries
	}
	if o.MaxAnswerBytes <= 0 {
		o.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if o.AnswerTimeout <= 0 {
		o.AnswerTimeout = DefaultAnswerTimeout
	}
	if o.MaxSpanBytes <= 0 {
		o.MaxSpanBytes = DefaultMaxSpanBytes
	}
	if o.Since.IsZero() {
		o.Since = time.Unix(0, 0)
	}
	if o.Until.IsZero() {
		o.Until = time.Now().Add(24 * time.Hour)
	}
	return o
}

// failed is what a pull returns on err: nothing was written.
func (p *puller) failed(err error) (Progress, error) {
	p.progress.Sessions, p.progress.Records = 0, 0
	return p.progress, err
}

// walk reads the traces of service with a span starting in [from, to],
// a window at a time, oldest first, and hands what it reads to sink. A
// window whose answer is full is read again in two halves (what sink was
// handed then comes again); a window of one instant, in which more
// traces start than a page holds, is read again with a page twice as
// large. What sink counts is counted from the answers no window replaces.
func (p *puller) walk(ctx context.Context, service string, from, to time.Time, sink traceSink) error {
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
		if p.progress.Queries >= p.o.MaxQueries {
			return fmt.Errorf("%w: more than %d, the limit on a pull (%s's traces from %s on are not read)",
				ErrTooManyQueries, p.o.MaxQueries, service, w.from.UTC().Format(time.RFC3339Nano))
		}
		p.read = answerCounts{}
		a, err := p.j.findTraces(ctx, service, w.from, w.to, w.page, p.lim, sink)
		if err == nil {
			err = p.flush()
		}
		if err != nil {
			return err
		}
		p.progress.Queries++
		if a.traces < w.page {
			p.read.addTo(&p.progress)
		}
		if p.o.Progress != nil {
			p.o.Progress(p.progress)
		}
		if a.traces < w.page {
			continue
		}
		if w.to.Sub(w.from) <= 0 {
			if 2*w.page > maxPageTraces {
				return fmt.Errorf("%w: %s: %d traces or more of %s start at %s, more than a query may ask for", ErrTooManyQueries, p.j, a.traces, service, w.from.UTC().Format(time.RFC3339Nano))
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

// answerCounts counts what was made of one answer.
type answerCounts struct {
	spans, notRecords, refused, tooLarge int
	present, repeated, conflicts         int
	conflictSessions                     []sessions.SessionID
}

// addTo counts an answer no window replaces.
func (c *answerCounts) addTo(p *Progress) {
	p.Spans += c.spans
	p.NotRecords += c.notRecords
	p.Refused += c.refused
	p.TooLarge += c.tooLarge
	p.Present += c.present
	p.Repeated += c.repeated
	p.Conflicts += c.conflicts
	p.ConflictSessions = noteConflicts(p.ConflictSessions, c.conflictSessions...)
}
