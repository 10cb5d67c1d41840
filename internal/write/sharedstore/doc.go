// Package sharedstore is the store a writer uses when other processes
// share its directory: a build, a server, the records command reading
// them. Badger lets one process at a time open a directory, so this store
// holds it only while it writes, and owns all the waiting that sharing
// takes, so that nothing above it (the Recorder, the exporter) knows about
// locks: it is the Badger recorder.BusyStore.
//
// A Writer opens the Badger store at its first write (creating it; a
// session that never changes anything opens nothing), merges the spool
// then (badgerstore.Open does), and lets the store go after IdleRelease
// without use, so a long-running process that has gone quiet keeps no one
// out. An opener that finds the store busy leaves its token in the
// waiting marker (internal/store/turns); a Writer that finds a fresh request
// from another opener after a write lets the store go at once and stays
// away for YieldGap, so a reader gets in within about one write even
// while the writer is busy. Two Writers of one process on one store take
// turns the same way.
//
// WriteContext waits for a busy store itself, retrying with jittered
// backoff (internal/ground/backoff) until its context ends — or, for a context
// with a deadline, until SpoolTime before it — and then sets the entries
// aside in the spool (internal/store/spool), which the next opener merges:
// records a writer acknowledged are not lost because another process held
// the store at the wrong moment, and they are in the spool by the
// deadline, not after it. A context already ended tries the store once
// and spools (the Recorder's Close, and a batch of recorder.SpillBytes).
// Write, which has no context to bound a wait, does not wait.
//
// The Writer's mutex guards its state only: opening and closing Badger,
// reading the marker and writing the spool happen outside it, so a slow
// disk holds up the operations that need the disk, never the ones that
// only need the state.
package sharedstore
