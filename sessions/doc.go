// Package sessions is what a store remembers of how its environment was
// built, and the rules that decide what is worth remembering.
//
// The caches of a build say what was decided: a winner per autotune key, a
// binary per kernel. Records say how: which candidates a tune ran and in
// what order, what each cost, when it happened. Every record belongs to a
// Session — one process's use of one store — and carries a Stamp: the
// session, a sequence number across all of the session's records, and an
// offset from the session's start on a monotonic clock. That is what
// restores order across subsystems that write independently, and lays them
// on one time axis.
//
// A session is kept only if it changed the environment. Until its first
// Changed record, what it records is held in memory up to a byte budget,
// past which the oldest goes first; so a warm-up that finds every kernel
// stored and every key tuned — or a server that runs for days on a warm
// environment — leaves nothing behind and holds a bounded amount. The first
// change keeps the session: the store is pruned to the sessions it should
// keep, then the session row, the held records (oldest first) and the
// change are written. The Recorder implements these rules.
//
// A Recorder writes through a Store: an ordered byte store with four
// methods, as small as slog.Handler, so the key layout and the CBOR values
// live here alone. Package badgerstore is the Store on Badger; MemStore is
// one in memory, for tests; package sessionstest is the conformance suite
// both pass. The Records reader reads a store back: sessions oldest first,
// each kind's records in stamp order as ordered range scans, generic
// (Record) or typed (Typed, through `record` struct tags), as Go iterators,
// with values that do not decode, or that disagree with their key (the key
// is the truth), skipped and counted rather than fatal. A store is
// untrusted input: every value is decoded within limits and a budget of
// what it may make a reader allocate, and a merged read of every kind
// holds a bounded buffer per kind, not an open read.
//
// This package imports neither OpenTelemetry nor Badger: package spanbridge
// maps spans to records, package exporter drives a Recorder from a
// TracerProvider.
package sessions
