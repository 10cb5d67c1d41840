package recorder

import (
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// DefaultPendingBudget is the default byte budget of the records a session
// holds in memory before its first change: 1 MiB.
const DefaultPendingBudget = 1 << 20

// SpillBytes bounds the records of a kept session that wait in memory for
// a busy store: a Flush of this many bytes of keys and values or more
// does not wait for a store another process holds but spools them at
// once (a BusyStore's WriteContext with a context already ended), and
// Full tells the caller to Flush before queueing more. About 35,000
// records of 200 bytes; spooling them takes about 0.1 s.
const SpillBytes = 8 << 20

// Config says how much a session records and how long a store keeps it.
// The zero Config is usable: level off (set Level to record), every
// session kept, the default budget.
type Config struct {
	// Level is how much is recorded.
	Level sessions.Level
	// KeepSessions, when positive, is how many sessions the store keeps:
	// when a session is kept, the store is pruned to the newest
	// KeepSessions-1 other sessions, so the session being kept always
	// survives. Zero (unset) keeps every session; to keep "0" sessions,
	// which the retention rules treat as 1, set 1.
	KeepSessions int
	// PendingBudget is the byte budget of held records (namespace + key +
	// value bytes) before the session's first change; past it the oldest
	// go first. Zero means DefaultPendingBudget; negative means no record
	// is held at all.
	PendingBudget int
	// KeepBy is what is kept: the session from its first change on
	// (KeepBySession, the zero value) or each trace that changed something
	// (KeepByTrace). Held traces share PendingBudget with the session's
	// held records.
	KeepBy KeepBy
	// Label names what the process is doing, for the session.
	Label string
	// Resource is the set of attributes describing the process (the
	// OpenTelemetry Resource), copied into the session row.
	Resource sessions.Attrs
	// Process, when set, describes the process whose records these are,
	// for the session row, in place of the one the Recorder runs in: an
	// importer records the sessions of other processes (the programs
	// sending OTLP to a Collector), and each row must name its sender.
	Process *Process
	// OnKeep, if set, is called once, when the session is kept, from the
	// goroutine whose Record kept it, after the kept records are queued:
	// the "session kept" hook the forwarder holds its spans until.
	OnKeep func()
	// IDs, when set, keeps the ids of the sessions started through it
	// unique (see IDs). Without it a session's id is its start, as is.
	IDs *IDs
	// ExactIDs makes the ids IDs gives the session's start exactly (the
	// next free nanosecond when another session of the process has it),
	// without random bits: the same store on every run, for a test or an
	// example on a pretend clock. Such ids are unique within the process
	// only.
	ExactIDs bool
	// MaxBytes, when positive, bounds the store's size once the session is
	// kept, counted as the pending budget counts (key + value bytes of
	// every entry): past it, other sessions older than this one are
	// deleted first, oldest first, then this session's oldest records,
	// never its row. Zero (unset) leaves the store unbounded.
	MaxBytes int64
	// Resume, when set, continues a session kept earlier (by this
	// process, or by one that ended) instead of starting one: the
	// Recorder is started and kept from the outset, under the session's
	// id and start, stamping from NextSeq on, without writing its row
	// again or pruning. The Importer resumes a sender's session after it
	// let the session go while the sender was quiet, and after a restart.
	Resume *Resume
	// Imported marks the session of a sender whose spans an Importer
	// records. Its Recorder never drops records waiting for a store that
	// fails writes (the Importer refuses new spans instead, so that what
	// it acknowledged is never dropped behind its back), and puts its
	// emptied batches in a pool all imported sessions share rather than
	// keeping its own (a gateway holds thousands of sessions).
	Imported bool
	// Sink, if set, takes each batch the Recorder writes in the store's
	// place (Sink): what it wrote goes there, and the store is left to
	// the prune, the byte bound and the spool.
	Sink Sink
	// Fill, if set, is given each entry queued when a flush fails, under
	// the Recorder's lock, before anything else takes them again (the
	// shed, the spool, the next flush): a caller that queued records with
	// values that are not their encodings (RecordKeptIn) sets their values
	// there, while what they stand for is still at hand. Whichever flush
	// fails — the caller's, another's, Close's — the values are set.
	Fill func(*sessions.Entry)
	// TallyEvery is how often at most the tally of what a kept session
	// let go (docs/FORMAT.md §3.6) is rewritten while the session runs:
	// at a Flush when it changed and TallyEvery has passed since it was
	// last written, and at Close. Zero means DefaultTallyEvery.
	TallyEvery time.Duration
	// Report, if set, is given what no caller can receive, with a class
	// for deduplication: that the byte bound deleted something, and why it
	// could not. It is called from the goroutine that flushes.
	Report func(class string, err error)
}

// Resume is a kept session to continue (Config.Resume).
type Resume struct {
	// ID is the session's id.
	ID sessions.SessionID
	// Start is the session's start: offsets are measured from it.
	Start time.Time
	// NextSeq is the seq the next stamp takes: above every seq the
	// session has used.
	NextSeq uint64
}

// Process is what a session row says of the process that recorded the
// session.
type Process struct {
	// PID is the operating system's process id; 0 when the sender did not
	// say.
	PID int
	// OS is the operating system, in runtime.GOOS's names where the sender
	// uses them (OpenTelemetry's os.type does).
	OS string
	// Arch is the CPU architecture, in runtime.GOARCH's names where the
	// sender uses them (OpenTelemetry's host.arch does for amd64, arm64).
	Arch string
}
