package exporter

import (
	"time"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// Defaults, named so they are documented where declared.
const (
	// DefaultLevel is the level when neither an option nor
	// OTELRECORDS_LEVEL sets one: every record, without heavy parts.
	DefaultLevel = intake.DefaultLevel
	// DefaultPendingBudget is the byte budget of held records before a
	// session's first change.
	DefaultPendingBudget = recorder.DefaultPendingBudget
	// DefaultMaxQueueSize is how many ended spans may wait for the
	// background goroutine, encoded (about 200 bytes each); past it, a
	// span waits a moment for room and is then dropped and counted
	// (Stats.Dropped) rather than the caller blocked (see
	// WithMaxQueueSize). The goroutine routes and writes a span in a few
	// microseconds, so the queue fills only under a burst far beyond what
	// a build's spans are.
	DefaultMaxQueueSize = 1 << 16
)

// config is what the options set: the policy the Importer shares
// (intake.Config), and what only the SpanProcessor has.
type config struct {
	intake.Config
	maxQueue int
	meters   metric.MeterProvider
	forward  sdktrace.SpanExporter // WithForward
}

// Option configures an Exporter. Options in code win over the environment
// variables (see New).
type Option func(*config)

// WithLevel sets how much is recorded: sessions.LevelOff records nothing
// and stamps nothing, sessions.LevelBasic (the default) every record
// without heavy attributes, sessions.LevelFull everything.
func WithLevel(l sessions.Level) Option { return func(c *config) { c.Level = &l } }

// WithKeepSessions keeps only the newest n sessions in the store: when this
// session is kept, older ones beyond n-1 others are pruned with their
// records. The session being kept always survives, so 0 (or less) behaves
// as 1. Without this option every session is kept.
func WithKeepSessions(n int) Option {
	return func(c *config) { c.SetKeepSessions(n) }
}

// DefaultMaxBytes is the store's byte bound when neither WithMaxBytes nor
// OTELRECORDS_MAX_BYTES sets one: none. WithKeepSessions bounds a store's
// sessions; only a byte bound keeps an endless session (a server's) from
// growing its store without end.
const DefaultMaxBytes = 0

// WithMaxBytes bounds the store's size to n bytes, counted as the pending
// budget counts them (namespace + key + value of every record and session
// row: what the store holds live, which its disk comes down to once
// Badger compacts; `records compact` does that at once). Once the session
// is kept, the exporter measures the store (one scan), then counts what
// it writes. Past n, it deletes other sessions older than this one, oldest
// first; then this session's oldest records (by seq), about n/16 bytes at
// a time, never its session row nor the records it is writing now.
// Sessions newer than this one, of other processes running beside it, are
// left to their own bound. What it deletes is counted in
// Stats.TrimmedSessions and Stats.TrimmedRecords and reported once through
// otel.Handle. n <= 0 means no bound, the default (DefaultMaxBytes).
func WithMaxBytes(n int64) Option {
	return func(c *config) { c.MaxBytes = &n }
}

// WithPendingBudget sets the byte budget (namespace + key + value bytes) of
// the records held before the session's first change; past it the oldest
// go first. 0 holds nothing: a session keeps only what it records from its
// first change on.
func WithPendingBudget(bytes int) Option {
	return func(c *config) { c.SetPendingBudget(bytes) }
}

// WithLabel names what the process is doing ("models build qwen3-8b"),
// written in the session row. It wins over the Resource attribute
// records.session.label; Exporter.Label changes it later.
func WithLabel(label string) Option { return func(c *config) { c.Label = &label } }

// WithStore makes the exporter write through s instead of a Badger store in
// a directory: a sessions.MemStore lets a test assert what a program
// recorded without a disk. Shutdown closes s.
func WithStore(s sessions.Store) Option { return func(c *config) { c.Store = s } }

// WithClock sets the clock the exporter reads when a span does not give
// the time. A session starts at its first span's start time, and each
// record's offset is its span's start minus that; the clock matters only
// if it reads earlier than the first span's start (a fake clock in a
// test), when the session starts at its reading. For a reproducible store,
// start spans with explicit timestamps (trace.WithTimestamp) and give a
// clock: with one, a session's id is its start exactly (the next free
// nanosecond when another exporter of this process has it) rather than
// its start with 24 random low bits (docs/FORMAT.md §4.1), the same on
// every run — and unique within this process only, so two processes given
// one start share an id. Under
// KeepByTrace, TraceGrace is measured on this clock too: a clock that
// stands still holds every trace that changes nothing until Shutdown
// lets it go (or the budget evicts it). The default is time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.Now = now } }

// WithMaxQueueSize sets how many ended spans may wait for the background
// goroutine. Past half of it, a goroutine ending a span yields to the
// background goroutine first (runtime.Gosched); when it is full, OnEnd
// waits for room while the background goroutine makes progress (routes
// spans, or has the store take more of a write), giving up once it has
// made none for 250 ms, and then drops the span and counts it
// (Stats.Dropped). After such a wait ends without room, spans are dropped
// without waiting until the background goroutine makes progress again, so
// a stalled store costs one short wait, not one per span. Default DefaultMaxQueueSize.
func WithMaxQueueSize(n int) Option { return func(c *config) { c.maxQueue = max(n, 1) } }
