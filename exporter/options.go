package exporter

import (
	"time"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// Defaults, named so they are documented where declared.
const (
	// DefaultLevel is the level when neither an option nor
	// OTELRECORDS_LEVEL sets one: every record, without heavy parts.
	DefaultLevel = sessions.LevelBasic
	// DefaultPendingBudget is the byte budget of held records before a
	// session's first change.
	DefaultPendingBudget = recorder.DefaultPendingBudget
	// DefaultMaxQueueSize is how many ended spans may wait for the
	// background goroutine; past it, spans are dropped and counted
	// (Stats.Dropped) rather than the caller blocked. The goroutine maps a
	// span in a few microseconds, so the queue fills only under a burst
	// far beyond what a build's spans are.
	DefaultMaxQueueSize = 1 << 16
)

type config struct {
	level        *sessions.Level
	keepSessions *int
	budget       *int
	label        *string
	marks        *Marks
	store        sessions.Store
	now          func() time.Time
	maxQueue     int
	meters       metric.MeterProvider
	forward      sdktrace.SpanExporter // WithForward
}

// Option configures an Exporter. Options in code win over the environment
// variables (see New).
type Option func(*config)

// WithLevel sets how much is recorded: sessions.LevelOff records nothing
// and stamps nothing, sessions.LevelBasic (the default) every record
// without heavy attributes, sessions.LevelFull everything.
func WithLevel(l sessions.Level) Option { return func(c *config) { c.level = &l } }

// WithKeepSessions keeps only the newest n sessions in the store: when this
// session is kept, older ones beyond n-1 others are pruned with their
// records. The session being kept always survives, so 0 (or less) behaves
// as 1. Without this option every session is kept.
func WithKeepSessions(n int) Option {
	n = max(n, 1)
	return func(c *config) { c.keepSessions = &n }
}

// WithPendingBudget sets the byte budget (namespace + key + value bytes) of
// the records held before the session's first change; past it the oldest
// go first. 0 holds nothing: a session keeps only what it records from its
// first change on.
func WithPendingBudget(bytes int) Option {
	return func(c *config) {
		b := bytes
		if b <= 0 {
			b = -1 // sessions.Config: negative holds nothing, 0 is the default
		}
		c.budget = &b
	}
}

// WithLabel names what the process is doing ("models build qwen3-8b"),
// written in the session row. It wins over the Resource attribute
// records.session.label; Exporter.Label changes it later.
func WithLabel(label string) Option { return func(c *config) { c.label = &label } }

// WithStore makes the exporter write through s instead of a Badger store in
// a directory: a sessions.MemStore lets a test assert what a program
// recorded without a disk. Shutdown closes s.
func WithStore(s sessions.Store) Option { return func(c *config) { c.store = s } }

// WithClock sets the clock the exporter reads when it needs the time and a
// span does not give it. Spans always do: a session starts at its first
// span's start time, and each record's offset is its span's start minus
// that. For a reproducible store, start spans with explicit timestamps
// (trace.WithTimestamp). The default is time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithMaxQueueSize sets how many ended spans may wait for the background
// goroutine before further ones are dropped and counted. Default
// DefaultMaxQueueSize.
func WithMaxQueueSize(n int) Option { return func(c *config) { c.maxQueue = max(n, 1) } }
