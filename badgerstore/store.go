package badgerstore

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/ground/env"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/chunk"
	"github.com/otelrecords/otelrecords/internal/store/space"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
	"github.com/otelrecords/otelrecords/sessions"
)

// copyValuesFrom is the value size from which Scan copies a value instead of
// yielding it from inside Badger's read. A value that large lives in the
// value log, and Badger holds that file's read lock while its callback
// runs; a write made from the loop body (a prune while reading, say) may
// need the same file's write lock to rotate the log, and would wait forever
// (badger issue #315). Inline values hold no lock. Values this large are
// rare, and far larger than the cost of their copy.
const copyValuesFrom = valueThreshold

// Store is a sessions.Store on a Badger database in one directory. It is
// safe for concurrent use.
type Store struct {
	db       *badger.DB
	dir      string // as given to Open
	path     string // dir with its links followed once: where the store is
	readOnly bool
	handle   func(error)
	progress func(entries int) // WithWriteProgress; nil without
	guard    *space.Guard      // a full disk (internal/store/space); nil when read-only

	// spooled are the spool's entries, sorted by key, that a read-only
	// Store on a store it cannot write yields from memory (OpenWait), and
	// unmerged how many entries the spool held; release, when not nil,
	// undoes what such an open set up, after Badger closes.
	spooled  []sessions.Entry
	unmerged int
	release  func()

	// closed is set (under mu) by the first Close; operations check it to
	// fail fast, and a Scan checks it at every entry to end early.
	closed atomic.Bool

	mu       sync.Mutex
	cond     sync.Cond // signals active reaching 0, and released
	active   int       // operations in progress; Close waits for 0
	released bool      // the first Close has closed Badger
}

// Open opens the store in dir, creating it for a read-write open. The
// directory is the store (see Place): a read-write Open creates it, mode
// 0700 with its parents, when it does not exist, and uses an existing one
// only if it holds nothing but a store's own files, never changing its
// mode; a store an earlier version put in dir's LegacyChild is opened
// there. The files of a store this process created, or whose directory or
// MANIFEST is private, are set to mode 0600 by every read-write Open and
// Close (Badger creates some with 0666 less the umask). A "~" at the
// start of dir is the user's home directory.
//
// A read-write Open fails with an error matching ErrNotStoreDir, which
// says how to fix it, for a path where no store can be written: a file, a
// socket, a directory holding the user's files, one with no writable
// parent, one another user could replace.
//
// Open fails at once, with an error matching ErrLocked, when another Store
// holds the directory; with one matching fs.ErrNotExist for a read-only
// open of a directory holding no store; and with one matching
// ErrNeedsRecovery for a read-only open of a store whose writer crashed.
// A read-write Open merges the spool, the records a writer set aside
// while another process held the store (docs/FORMAT.md §7).
// A store with a damaged file gives an error matching ErrCorrupt, a
// *CorruptError naming the file, and never a crash (see doctor.Verify); a
// read-write open on a nearly full file system, one matching ErrNoSpace.
func Open(dir string, opts ...Option) (*Store, error) {
	c := config{handle: defaultErrorHandler}
	for _, o := range opts {
		o(&c)
	}
	path, err := locate(dir, c.readOnly)
	if err != nil {
		return nil, err
	}
	return openAt(dir, path, c)
}

// locate returns the directory of the store in dir: for a writer, where
// Place puts it; for a reader, dir resolved (resolve), which creates and
// refuses nothing.
func locate(dir string, readOnly bool) (string, error) {
	if readOnly {
		return storedir.Resolve(dir)
	}
	return Place(dir)
}

// openAt opens the store at path, located for dir (as given, for
// messages) by locate.
func openAt(dir, path string, c config) (*Store, error) {
	_, err := os.Lstat(filepath.Join(path, badger.ManifestFilename))
	created := !c.readOnly && errors.Is(err, fs.ErrNotExist)
	if errors.Is(err, fs.ErrNotExist) {
		// No store here: perhaps because a doctor run was cut short while
		// the store was moved, which neither a reader nor a new store
		// should hide.
		if err := storedir.Interrupted(dir, path); err != nil {
			return nil, err
		}
	}
	if c.readOnly {
		// Badger would fail too, but with a message naming its manifest;
		// checking first also guarantees a reader creates nothing.
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("otelrecords: no store at %s: %w", dir, fs.ErrNotExist)
		} else if err != nil {
			return nil, fmt.Errorf("otelrecords: open store %s: %w", dir, err)
		}
	} else if err := makeDir(path); err != nil {
		return nil, fmt.Errorf("otelrecords: create store %s: %w", dir, err)
	}
	// Links, FIFOs and devices where a store keeps files are refused
	// before anything is opened (storedir.Check); and Badger panics on
	// some damaged files in goroutines no recover reaches, and silently
	// drops data over others: read them first (check.go).
	if err := checkBeforeOpen(path, c.readOnly, false); err != nil {
		return nil, err
	}
	var g *space.Guard
	if !c.readOnly {
		g = space.NewGuard(path, guardSizes)
	}
	db, err := openBadger(badgerOptions(path, c, g))
	if err != nil {
		return nil, openError(dir, err)
	}
	g.Watch(db.Tables)
	// The directory as Badger's open left it, listed once for the
	// reserve's pass and the files' (BENCHMARKS.md, figure 9); nil, and
	// each lists it.
	var listed []fs.DirEntry
	if !c.readOnly {
		listed = listStore(path)
	}
	// The reserve (internal/store/space), once Badger holds the
	// directory, so unshared.
	if err := g.Take(listed); err != nil {
		g.BeforeClose()
		_ = db.Close()
		g.Close()
		return nil, err
	}
	s := newStore(db, dir, path, c.readOnly)
	s.guard = g
	s.handle = c.handle
	s.progress = c.progress
	if !c.readOnly {
		if err := privateFilesIn(path, listed, created); err != nil {
			c.handle(err)
		}
		// Records a writer set aside while another process held the store
		// go in first (docs/FORMAT.md §7). A merge that fails is reported
		// and left for the next opener: this open is still good. A spool
		// file whose entries no store takes is set aside, not retried.
		if _, err := spool.Merge(path, s.mergeSpooled, c.handle); err != nil {
			c.handle(err)
		}
	}
	return s, nil
}

// newStore returns the Store on db, open on the store in dir (at path).
func newStore(db *badger.DB, dir, path string, readOnly bool) *Store {
	s := &Store{db: db, dir: dir, path: path, readOnly: readOnly}
	s.cond.L = &s.mu
	return s
}

// mergeSpooled writes the entries of a spool file, or refuses them all,
// wrapping spool.ErrRejected, when one is an entry no store holds.
func (s *Store) mergeSpooled(entries []sessions.Entry) error {
	if err := checkEntries(entries); err != nil {
		return spool.Reject(err)
	}
	return s.Write(entries)
}

// makeDir creates dir with mode 0700 if it does not exist. MkdirAll's mode
// is reduced by the umask, so the leaf is set again; a directory that
// exists is left as it is.
func makeDir(dir string) error {
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return err // nil for an existing directory; Badger rejects a file
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	return os.Chmod(dir, dirMode)
}

// openBadger is badger.Open with its panics in this goroutine turned into
// errors: the Store runs inside other people's programs, and a corrupt
// store must not bring them down. Badger's deferred releases (its lock, its
// manifest) run while the panic unwinds; so does a fault on a mapped page
// in this goroutine (Badger writes the headers of new logs through their
// maps, which a disk filled since the check cannot back:
// internal/store/space).
func openBadger(opt badger.Options) (db *badger.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("badger panicked: %v", r)
		}
	}()
	return badger.Open(opt)
}

// DefaultDir returns the store directory used when none is given: the
// value of the environment variable OTELRECORDS_DIR when it is set and not
// empty, and otherwise "otelrecords/default" under the user's cache
// directory (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux,
// ~/Library/Caches on macOS, %LocalAppData% on Windows). It fails only
// when the variable is unset and there is no cache directory.
func DefaultDir() (string, error) {
	if dir, ok := env.Lookup(env.Dir); ok {
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("otelrecords: no default store directory (set %s): %w", env.Dir, err)
	}
	return filepath.Join(cache, "otelrecords", "default"), nil
}

// Dir returns the directory the store was opened in, as given to Open.
func (s *Store) Dir() string { return s.dir }

// Path returns the directory the store's files are in: Dir with its "~"
// expanded and its links followed, or its LegacyChild where an earlier
// version put the store (Place). It is where a process asking for the
// store leaves its request, and where the store's spool is.
func (s *Store) Path() string { return s.path }

// Unmerged returns how many spooled entries (records and session rows a
// writer set aside while the store was busy) a read-only Store from
// OpenWait yields from memory because it could not write them into the
// store: they stay in the spool, for a writer to merge. It is 0 for every
// other Store.
func (s *Store) Unmerged() int { return s.unmerged }

// spooledIn returns the spooled entries whose keys k have start <= k < end
// (a nil end is no bound).
func (s *Store) spooledIn(start, end []byte) []sessions.Entry {
	if len(s.spooled) == 0 {
		return nil
	}
	cmp := func(e sessions.Entry, k []byte) int { return bytes.Compare(e.Key, k) }
	from, _ := slices.BinarySearchFunc(s.spooled, start, cmp)
	to := len(s.spooled)
	if end != nil {
		to, _ = slices.BinarySearchFunc(s.spooled, end, cmp)
	}
	return s.spooled[from:max(from, to)]
}

// begin registers an operation, or returns sessions.ErrClosed once Close
// has begun. Every successful begin is paired with end.
func (s *Store) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return sessions.ErrClosed
	}
	s.active++
	return nil
}

func (s *Store) end() {
	s.mu.Lock()
	s.active--
	if s.active == 0 && s.closed.Load() {
		s.cond.Broadcast()
	}
	s.mu.Unlock()
}

// Write stores the entries in one Badger WriteBatch, in order, and returns
// once Badger has acknowledged them all. A batch larger than one Badger
// transaction is committed as several, so a failed Write may have stored
// some entries; writing them again is harmless. Badger keeps the entries'
// slices only until the batch is flushed, which Write waits for, so the
// caller may reuse them as soon as Write returns.
//
// Write fails with an error matching ErrReadOnly on a read-only Store, and
// with sessions.ErrClosed after Close. Keys must be non-empty, at most
// 65000 bytes, and must not start with "!badger!"; values must be at most
// 16 MiB: a batch holding another entry fails, before anything is
// written, with an error matching ErrInvalidEntry.
func (s *Store) Write(entries []sessions.Entry) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.end()
	if s.readOnly {
		return fmt.Errorf("%w: cannot write to %s", ErrReadOnly, s.dir)
	}
	if len(entries) == 0 {
		return nil
	}
	if err := checkEntries(entries); err != nil {
		return fmt.Errorf("otelrecords: write to %s: %w", s.dir, err)
	}
	records := len(entries)
	entries, counts := chunk.Chunked(entries)
	// Badger may need a new log and a table for these (internal/store/space).
	if err := s.guard.CheckWrite(entries); err != nil {
		return err
	}
	released := s.guard.Released()
	wb := s.db.NewWriteBatch()
	// Cancel after a Flush does nothing; after a failure it releases the
	// batch's transaction, which would otherwise pin Badger's read mark.
	defer wb.Cancel()
	taken, told := 0, 0 // records handed to Badger, and reported so
	for i, e := range entries {
		if err := wb.Set(e.Key, e.Value); err != nil {
			return fmt.Errorf("otelrecords: write to %s: %w", s.dir, err)
		}
		taken += counts[i]
		if taken-told < progressEvery {
			continue
		}
		for ; taken-told >= progressEvery; told += progressEvery {
			if s.progress != nil {
				s.progress(progressEvery)
			}
		}
		// The disk filled while Badger wrote, and its reserve went back
		// to it: hand it no more (internal/store/space). What it
		// committed is written, and harmless to write again.
		if s.guard.ReleasedSince(released) {
			return s.guard.Refuse(records)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("otelrecords: write to %s: %w", s.dir, err)
	}
	if s.progress != nil && taken > told {
		s.progress(taken - told)
	}
	return nil
}

// Badger's limits on an entry (Txn.modify): a key's length must fit a
// table's 16-bit header with room for Badger's own prefix and timestamp,
// and a value must fit one value-log file.
const (
	maxKeySize   = 65000
	maxValueSize = valueLogFileSize
	badgerPrefix = "!badger!"
)

// checkEntries returns an error matching ErrInvalidEntry, saying which
// entry and why in a line, when an entry of entries is one Badger refuses
// whatever the state of the store.
func checkEntries(entries []sessions.Entry) error {
	for i, e := range entries {
		var why string
		switch {
		case len(e.Key) == 0:
			why = "an empty key"
		case len(e.Key) > maxKeySize:
			why = fmt.Sprintf("a key of %d bytes, over Badger's %d", len(e.Key), maxKeySize)
		case bytes.HasPrefix(e.Key, []byte(badgerPrefix)):
			why = "a key starting with " + badgerPrefix + ", which Badger keeps for itself"
		case len(e.Value) > maxValueSize:
			why = fmt.Sprintf("a value of %d bytes, over Badger's %d", len(e.Value), maxValueSize)
		default:
			continue
		}
		return &invalidEntry{fmt.Sprintf("entry %d of %d has %s, which no store holds", i+1, len(entries), why)}
	}
	return nil
}

// invalidEntry is the error of checkEntries: one line, matching
// ErrInvalidEntry.
type invalidEntry struct{ msg string }

func (e *invalidEntry) Error() string        { return e.msg }
func (e *invalidEntry) Is(target error) bool { return target == ErrInvalidEntry }

// Close waits for the operations in progress to end (a Scan ends at its
// next entry), then closes Badger, which flushes its memtable and releases
// the directory's lock. Operations started after Close has begun fail with
// sessions.ErrClosed. Later calls wait for the first one to finish and
// return nil. Since Close waits for a Scan in progress, calling it from
// that Scan's loop body never returns.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed.Load() {
		for !s.released {
			s.cond.Wait()
		}
		s.mu.Unlock()
		return nil
	}
	s.closed.Store(true)
	for s.active > 0 {
		s.cond.Wait()
	}
	s.mu.Unlock()

	s.guard.BeforeClose()
	err := s.db.Close()
	s.guard.Close()
	if s.release != nil {
		s.release()
	}
	if !s.readOnly {
		// Badger flushed its memtable into a table of 0666 less the umask.
		if err := privateFiles(s.path, false); err != nil {
			s.handle(err)
		}
	}

	s.mu.Lock()
	s.released = true
	s.cond.Broadcast()
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("otelrecords: close store %s: %w", s.dir, err)
	}
	return nil
}

var _ sessions.Store = (*Store)(nil)
