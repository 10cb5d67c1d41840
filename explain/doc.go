// Package explain answers the questions people ask of a session once it is
// recorded: what ran inside what, where the time went, what bounded the
// session's duration, and what work was done more than once.
//
// A store holds each kind's records in stamp order, kind by kind: the
// story of a session is told across them. InStampOrder merges one
// session's kinds back into the order its records were stamped. A record
// from a span carries its span id and its parent's, and that is what
// nests it: a record hangs under the record of its parent span when that
// span was recorded in the same session, and is a root otherwise —
// records written by code rather than spans (no span id) too. Records are
// never nested because their times overlap: four clients served at once
// are four roots side by side, not one inside the other. Nesting places
// records as they stream by (Nest, for a program that walks a session
// once); SessionTree holds a session built (Tree), to walk in pre-order
// and to ask the rest of it.
//
// Time is counted once. A Summary gives each kind the time during which at
// least one of its records was open (the union of their intervals), so
// nested and overlapping records are not added twice and no kind can
// claim more than the session lasted. The critical path is the chain of
// records that bounded the session's duration, found as Jaeger finds a
// trace's: from the session's end, the record that ended last, within it
// the child that ended last, then the one that ended before that child
// started, and so on back to the start. Rework sums, across sessions,
// what parents spent in their children (the candidates an autotune ran)
// and which records were redone.
//
// Every answer counts what a record did the same way (Verdict): a record
// is a hit only when it changed nothing and nothing inside it, at any
// depth, changed anything; an observed lookup inside which a compile
// changed something is a miss, which is work. A lookup that changed
// something (it filled the cache) and the lookups after it that found
// the key are work, then hits. What a kept session let go is a hit too,
// counted in its tally: Rework.Tally adds it (package explain/tallied sums
// tallies for the other views).
//
// Why work was done is one rule too (Cause), which Why tells record by
// record and Rework counts: new, the first of its key in the store; new
// here, the first on its instance (InstanceKeys: service.instance.id,
// host.name), another instance having done it with a cache of its own;
// raced, done while the same session was still doing it; or done again
// on its instance, for other inputs, in another environment, or
// forgotten. A fleet's stores read as one are told apart by instance, so
// one instance's cache is never blamed for another's work.
//
// A tree holds a Node of 48 bytes per record, and each kind and name
// once: its seq, times and effect, and where it hangs, not the record,
// which SessionTree.Record reads again where more is needed. A session of
// a million records is a tree of some 50 MB, whatever its records hold.
//
// Stores are untrusted and sessions can be large: every answer here costs
// time and memory in proportion to the records it reads (a sort's log
// factor at most), whatever their shape — a million roots, nesting ten
// thousand deep, a hundred thousand kinds — and nothing recurses as deep
// as the data goes.
//
// The command-line reader, the HTML report, the exports and replay ask
// their questions here, so a Go program can ask the same ones. This
// package reads through the public API of package sessions alone: it
// imports no OpenTelemetry, no database, no command.
package explain
