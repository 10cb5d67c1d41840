package importer

import (
	"time"

	"github.com/otelrecords/otelrecords/internal/write/intake"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// config is what the options set: the policy the SpanProcessor's options
// set too (package exporter), written once.
type config struct {
	intake.Config
}

// Option configures an Importer. Options in code win over the environment
// variables (OTELRECORDS_LEVEL, _KEEP_SESSIONS, _PENDING_BUDGET, _LABEL,
// _MARKS, _MAX_BYTES, _KEEP_BY), which an Importer reads as
// exporter.New does.
type Option func(*config)

// DefaultLevel is the level when neither WithLevel nor OTELRECORDS_LEVEL
// sets one: every record, without heavy parts.
const DefaultLevel = intake.DefaultLevel

// WithLevel sets how much is recorded: sessions.LevelOff records nothing
// (Import takes every span and keeps none), sessions.LevelBasic (the
// default) every record without heavy attributes, sessions.LevelFull
// everything.
func WithLevel(l sessions.Level) Option { return func(c *config) { c.Level = &l } }

// WithKeepSessions keeps only the newest n sessions in the store, over
// every sender: when a session is kept, older ones beyond n-1 others are
// pruned with their records. 0 (or less) behaves as 1. Without this
// option every session is kept.
func WithKeepSessions(n int) Option { return func(c *config) { c.SetKeepSessions(n) } }

// WithMaxBytes bounds the store's size to n bytes, as
// exporter.WithMaxBytes does for a Go program's store: past n, the oldest
// other sessions go, then a session's own oldest records. n <= 0 means no
// bound, the default.
func WithMaxBytes(n int64) Option { return func(c *config) { c.MaxBytes = &n } }

// WithPendingBudget sets the byte budget of the records each sender's
// session holds before its first change (and, under KeepByTrace, of its
// traces not decided); past it the oldest go first. 0 holds nothing. What
// every session holds together is bounded by Config.HeldBytes.
func WithPendingBudget(bytes int) Option { return func(c *config) { c.SetPendingBudget(bytes) } }

// WithLabel names what the senders are doing, written in each session row
// whose sender does not name it itself (records.session.label in its
// Resource wins).
func WithLabel(label string) Option { return func(c *config) { c.Label = &label } }

// WithStore makes the Importer write through s instead of a Badger store
// in a directory: a sessions.MemStore lets a test assert what was
// recorded without a disk. Shutdown closes s.
func WithStore(s sessions.Store) Option { return func(c *config) { c.Store = s } }

// WithClock sets the Importer's clock: when a span arrived, which places
// its session (see Importer), and the clock DecisionWait, SessionTimeout,
// the dedup window and TraceGrace are measured on. The default is
// time.Now.
func WithClock(now func() time.Time) Option { return func(c *config) { c.Now = now } }

// Marks is the marks policy: which implicit marks — spans that carry
// neither records.kind nor records.effect, such as an HTTP server's —
// become records. It is exporter.Marks, documented there.
type Marks = intake.Marks

// The marks policies.
const (
	// MarksEnclosing records an implicit mark only when a record starts
	// inside it, at any depth (the default).
	MarksEnclosing = intake.MarksEnclosing
	// MarksAll records every implicit mark.
	MarksAll = intake.MarksAll
	// MarksNone records no implicit mark.
	MarksNone = intake.MarksNone
	// DefaultMarks is the marks policy when neither WithMarks nor
	// OTELRECORDS_MARKS sets one.
	DefaultMarks = intake.DefaultMarks
)

// ParseMarks parses a marks policy by name: all, enclosing or none, in any
// case.
func ParseMarks(s string) (Marks, error) { return intake.ParseMarks(s) }

// WithMarks sets which implicit marks become records; see Marks. Default
// DefaultMarks.
func WithMarks(m Marks) Option { return func(c *config) { c.Marks = &m } }

// KeepBy is what a change keeps: the sender's whole session, or the one
// trace that made it. It is exporter.KeepBy, documented there.
type KeepBy = intake.KeepBy

// The retention units.
const (
	// KeepBySession keeps a sender's session at its first changed record,
	// with what it held before, and records everything after it.
	KeepBySession = intake.KeepBySession
	// KeepByTrace decides each trace on its own: kept at its first changed
	// record, dropped when its root has ended and TraceGrace passed with
	// nothing changed.
	KeepByTrace = intake.KeepByTrace
	// DefaultKeepBy is the retention unit when neither WithKeepBy nor
	// OTELRECORDS_KEEP_BY sets one.
	DefaultKeepBy = intake.DefaultKeepBy
)

// TraceGrace is how long, under KeepByTrace, a trace whose root has ended
// is still held for children arriving after it before it is dropped.
const TraceGrace = recorder.TraceGrace

// ParseKeepBy parses a retention unit by name: session or trace, in any
// case.
func ParseKeepBy(s string) (KeepBy, error) { return intake.ParseKeepBy(s) }

// WithKeepBy sets what a change keeps: the session (KeepBySession, the
// default) or the trace that made it (KeepByTrace, for servers).
func WithKeepBy(k KeepBy) Option { return func(c *config) { c.KeepBy = &k } }

// SpanStartKey is the attribute a record carries when its span's start
// time was one a session cannot hold (before 1970, from 2262 on): the
// span is placed at its arrival, and its own start kept here, as RFC 3339
// text with nanoseconds (docs/FORMAT.md §3.5).
const SpanStartKey = spanbridge.SpanStartKey

// ErrDirInUse is matched by the error New returns for a directory another
// Importer or exporter of this process records into and has not shut
// down.
var ErrDirInUse = intake.ErrDirInUse
