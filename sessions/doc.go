// Package sessions is the model of what a store remembers of how a
// program's environment was built, and the reader of a store: the package
// a Go program reads records with.
//
// The caches of a build say what was decided: a winner per autotune key, a
// binary per kernel. Records say how: which candidates a tune ran and in
// what order, what each cost, when it happened. Every [Record] belongs to
// a [Session] — one process's use of one store — and carries a [Stamp]:
// the session, a sequence number across all of the session's records, and
// an offset from the session's start on a monotonic clock. That is what
// restores order across subsystems that write independently, and lays them
// on one time axis.
//
// A session is kept only if it changed the environment. Until its first
// record whose [Effect] is Changed, what it records is held in memory up
// to a byte budget, past which the oldest goes first; so a warm-up that
// finds every kernel stored and every key tuned — or a server that runs
// for days on a warm environment — leaves nothing behind and holds a
// bounded amount. The first change keeps the session: the store is pruned
// to the sessions it should keep, then the session row, the held records
// (oldest first) and the change are written. Package exporter's recorder
// keeps these rules; a reader sees the sessions they kept.
//
// # Reading a store
//
// [NewRecords] reads any [Store]: the Badger store of a directory
// (package badgerstore, opened read-only), a [MemStore], or several
// stores read as one ([Union]). It yields, as Go iterators:
//
//   - the sessions, oldest first ([Records.Sessions]), or the newest
//     ([Records.Newest]);
//   - a kind's records in stamp order ([Records.All]), or decoded into a
//     struct of your own through `record` tags ([Typed]; [Decode] for one
//     record), or every kind merged in stamp order
//     ([Records.InStampOrder]);
//   - what each session holds, from the keys alone ([Records.Counts],
//     [Records.Kinds]).
//
// A store is untrusted input (stores travel between machines): every value
// is decoded within limits and a budget of what it may make a reader
// allocate, and a value that does not decode, or that disagrees with its
// key (the key is the truth), is skipped and counted ([Records.Skipped])
// rather than fatal. A merged read of every kind holds a bounded buffer
// per kind, not an open read.
//
// # The Store seam
//
// A [Store] is an ordered byte store with four methods, as small as
// slog.Handler, so that the key layout and the values stay here and a
// Store only keeps ordered bytes. Package sessionstest is the conformance
// suite every Store passes, as testing/slogtest is for handlers. [MemStore]
// is a Store in memory: a test asserts what a program recorded without a
// disk.
//
// # The format
//
// A record is stored as [Stamped.MarshalCBOR] encodes it (docs/FORMAT.md
// §3): plain CBOR, which a reader in any language decodes. The codec
// itself is not API: it is written by hand for the hot paths, and held to
// the reference encoding byte for byte by fuzz tests.
//
// This package imports neither OpenTelemetry nor Badger: package spanbridge
// maps spans to records, package exporter records a program's spans.
package sessions
