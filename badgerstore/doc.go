// Package badgerstore is the [sessions.Store] on Badger v4: where the
// records of a kept session go to disk, and where a reader finds them again.
//
// # A guest in someone else's process
//
// The store runs inside programs that never asked for a database: a build
// tool, a compiler cache, a model server. Badger's defaults are sized for a
// database server (five 64 MiB memtables, a 256 MiB block cache, 1 GiB
// value-log files, INFO lines on stderr), so Open cuts them down: two 8 MiB
// memtables, values inline up to 1 MiB, 16 MiB value-log files, an 8 MiB
// block cache and two compactors. The host's stderr stays its own:
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
// [WithReadOnly], which never creates a directory or a file.
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
// [ErrNeedsRecovery].
//
// Records carry whatever the host put in its spans, so the directory Open
// creates has mode 0700. Badger creates some files inside with mode 0666
// less the umask; the directory's mode is what keeps other users out. A
// directory that already exists keeps its mode.
//
// Open turns a panic of Badger in the calling goroutine (a corrupt file, a
// bad option) into an error. Badger also opens tables in goroutines of its
// own, where a panic on a corrupt table still ends the process; guarding
// against that is not done here yet.
package badgerstore
