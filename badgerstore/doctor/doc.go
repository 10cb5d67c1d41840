// Package doctor is the forensics of a Badger store: it finds the damage a
// disk, a file system or a careless hand did to a store's files, and
// recovers what is still readable. `records doctor` is its command; a Go
// program calls it the same way.
//
// It lives outside package badgerstore, as bbolt keeps its surgeon apart
// from the database: badgerstore opens healthy stores, and refuses a
// damaged one at Open with an error naming the file
// (badgerstore.ErrCorrupt); what to do about the damage is here. Neither
// entry point reads a damaged store through Badger's database code, which
// panics on some damaged files in goroutines no recover reaches and
// silently loses data over others: its files are read by Badger's own
// format code under recover (internal/store/badgerfmt).
//
// The entry points:
//
//   - [Verify] reads every file Badger reads, every block of every table
//     included, and returns the damage, one *badgerstore.CorruptError a
//     damaged file. It changes nothing.
//   - [Recover] moves a damaged store aside, untouched, and puts in its
//     place a new store holding every record and session row that can
//     still be read, and the spool; its [Recovery] says what was kept and
//     what was lost. It is crash-safe: a run cut short leaves a journal
//     beside the store, which badgerstore.Open reports
//     (badgerstore.ErrRecoveryInterrupted) and the next Recover finishes.
//
// Both take the store's lock, so they never read the files of a live
// writer (an error matching badgerstore.ErrLocked), refuse a store holding
// a link, a FIFO or a device (badgerstore.ErrUnsafeFile), and read no file
// when the program links a release of Badger other than the one the file
// readers were written for.
package doctor
