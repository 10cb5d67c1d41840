// Package badgerstore is the [sessions.Store] on Badger v4: where the
// records of a kept session go to disk, and where a reader finds them again.
//
// A writer opens a store with [Open] (the exporter does, when a session is
// first kept); a reader with [OpenWait] and [WithReadOnly], which waits for
// a writer that holds the store, and reads it through package sessions
// ([sessions.NewRecords]). The directory named is the store ([Place]);
// [DefaultDir] is the one used when none is named. What goes wrong has an
// error to match: a busy store ([ErrLocked]), a damaged one ([ErrCorrupt];
// package badgerstore/doctor recovers it), a full disk ([ErrNoSpace]), a
// file no store holds ([ErrUnsafeFile]), a directory that is not a store's
// ([ErrNotStoreDir]). The sections below say why it is shaped so.
//
// # A guest in someone else's process
//
// The store runs inside programs that never asked for a database: a build
// tool, a compiler cache, a model server. Badger's defaults are sized for a
// database server (five 64 MiB memtables, a 256 MiB block cache, 1 GiB
// value-log files, INFO lines on stderr), so Open cuts them down: 1 MiB
// memtables (five may wait to flush, so that writes ride out a disk that
// stalls a flush), values inline up to 128 KiB, 512 KiB tables compacted
// three level-0 tables at a time, 16 MiB value-log files, a 1 MiB block
// cache and two compactors. The host's stderr stays its own:
// Badger's INFO and DEBUG lines are dropped, and its warnings and errors go
// to the error handler ([WithErrorHandler]), by default [slog.Default] at
// warn level.
//
// # Lazy and locked
//
// Badger locks its directory (flock) for the Store that opens it: one
// read-write Store, or any number of read-only ones, at a time. The lock
// belongs to the open, not to the process, so a second Open of the same
// directory fails in the same process just as it does in another one. Open
// never waits for a busy lock: it fails at once with an error matching
// [ErrLocked]. Several processes share one store over time, so a writer
// should hold it only while it has something to write: the exporter opens
// it lazily, when a session is first kept (a session that changes nothing
// never opens it at all), and lets it go when idle. A reader opens with
// [WithReadOnly], which never creates a directory or a file, and waits
// for a busy store with [OpenWait], which asks the holder to let it go.
// Records a writer could not write before its deadline, because the store
// stayed busy, wait in a spool beside the data; a read-write Open (and
// OpenWait) writes them into the store first.
//
// # Keys sort as stamps
//
// A Store keeps ordered bytes and nothing else; what they mean is package
// sessions' business. Badger orders keys as bytes, and record keys are
// fixed width after their namespace (namespace, 0x00, big-endian session
// and seq), so byte order is stamp order: [Store.Scan] reads a kind in stamp
// order with no sort, and [Store.DeleteRange] prunes a range of sessions at
// a cost that follows what it deletes. Scan reads keys first and each value
// only when it reaches it, handing it over from Badger's buffer rather than
// copying it again.
//
// # Durability and safety
//
// [Store.Write] returns once Badger has acknowledged every entry. Badger's
// log is a memory map, so acknowledged entries survive the process being
// killed; writes are not synced, so a power failure may lose the last of
// them. The next read-write Open replays the log. Until then a read-only
// Open of a store whose writer crashed fails with an error matching
// [ErrNeedsRecovery]; [OpenWait] reads it all the same.
//
// The directory named is the store (see Place): created when missing,
// an existing one used only if it holds nothing but a store's own files,
// anything else refused with an error naming a subdirectory to use.
//
// Records carry whatever the host put in its spans, so the directory
// Open creates has mode 0700; an existing one keeps the mode its owner
// gave it. Badger creates some files inside with mode 0666 less the umask
// (a umask of 000 makes them world-writable), and the umask belongs to
// the host process; so every read-write Open and Close of a private
// store (one that Open created, or whose directory or MANIFEST is
// private) sets its files to 0600, and a file Badger creates in between
// is 0600 from the next Open or Close on. A store whose owner opened up
// its directory and MANIFEST (a group that reads it) keeps their modes.
//
// Open turns a panic of Badger in the calling goroutine (a corrupt file, a
// bad option) into an error. Badger also opens tables in goroutines of its
// own, where a panic on a damaged table ends the process, and it accepts
// some damage silently and then loses data over it (a MANIFEST cut short
// makes it delete the tables it no longer lists). So Open first reads
// every file Badger's Open reads, with Badger's own table code run under
// recover in goroutines of ours, and reports a damaged file by name
// ([ErrCorrupt], a [*CorruptError]); on a store of a million records this
// costs 2.5 ms. The forensics are a package of their own,
// badgerstore/doctor (`records doctor`): doctor.Verify reads every block
// of every table as well, and doctor.Recover moves a damaged store aside
// and copies what is readable into a new one.
//
// # A store from elsewhere
//
// Stores travel: copied between machines, unpacked from tarballs, mounted
// read-only, shared between users. Open refuses a store holding a link,
// a FIFO, a device or a socket, naming it ([ErrUnsafeFile]), so nothing
// follows a link out of the store or blocks on a FIFO; the spool and the
// waiting marker are read only as regular files of bounded size; a spool
// file that can never be merged is set aside, and the newer ones merged.
// Reading never needs writing: where a store cannot be written, [OpenWait]
// replays a crashed writer's log from a copy and shows the spool from
// memory ([Store.Unmerged]), changing nothing. The copy lives in the
// temporary directory while the Store is open; a reader killed before it
// closes leaves it, and the next read-only open removes it (a live
// reader's is locked, and stays). doctor.Recover swaps the
// recovered store in through a journal, so a doctor killed at any moment
// leaves the old store, the new one, or a pointer to both
// ([ErrRecoveryInterrupted]), and the next one finishes.
//
// # A full disk
//
// Badger writes through memory maps, and a write to one on a full file
// system raises SIGBUS, which no recover catches. A read-write Open
// refuses with [ErrNoSpace] while less than [MinFreeSpace] is free, and
// Write while less than MinFreeSpace and its entries are free; a caller
// keeps the entries and tries again once there is room. A store open for
// writing holds 16 MiB of that in a reserve file, which it gives back to
// Badger's writes, at their faults, once another process has filled the
// disk (on Linux, amd64 and arm64, through a SIGBUS handler of its own
// put before Go's; package internal/store/space says how, and what is
// left).
package badgerstore
