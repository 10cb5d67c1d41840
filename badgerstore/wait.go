package badgerstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/ground/backoff"
	"github.com/otelrecords/otelrecords/internal/ground/storefs"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
	"github.com/otelrecords/otelrecords/internal/store/turns"
	"github.com/otelrecords/otelrecords/sessions"
)

// Badger lets one process at a time open a directory, yet several processes
// share a store over time: a build, a server, the command that reads them.
// A writer opens the store only to write and lets it go when idle, or at
// once when someone waits for it (internal/write/sharedstore); a reader waits
// here. An opener that finds the store busy leaves its pid in a small
// marker file beside the data (internal/store/turns), which asks the holder to
// let it go, and retries with jittered backoff; it gets in within about
// one write of a busy writer.
const (
	// minBackoff and maxBackoff bound the retry interval of a busy open.
	minBackoff = 5 * time.Millisecond
	maxBackoff = 100 * time.Millisecond
)

// OpenWait opens the store in dir like Open, but waits while another
// process holds it, until ctx ends: it asks the holder to yield and
// retries with jittered backoff, calling onWait (if not nil) once, when it
// first finds the store busy, so a command can say that it waits.
//
// A read-only open sees every acknowledged record. Where the store can be
// written, a crashed writer's log is replayed and a spool left by a writer
// merged first, by a brief read-write open. Where it cannot (read-only
// media, a snapshot, another user's store, a file system too full for
// Badger to write safely), OpenWait writes nothing: it
// replays the crashed writer's log from a copy in a temporary directory
// (at most 256 MiB of logs), and yields the spool's entries from memory
// (at most 256 MiB), leaving them in the spool for a writer to merge;
// Store.Unmerged says how many.
func OpenWait(ctx context.Context, dir string, onWait func(error), opts ...Option) (*Store, error) {
	c := config{handle: defaultErrorHandler}
	for _, o := range opts {
		o(&c)
	}
	// Where the store is, decided once: every try opens it there, and
	// the request is left there, in the store's own directory, where its
	// holder looks for it.
	path, err := locate(dir, c.readOnly)
	if err != nil {
		return nil, err
	}
	b := backoff.Backoff{Min: minBackoff, Max: maxBackoff}
	waited := false
	for {
		st, err := openMerged(dir, path, c)
		if err == nil || !errors.Is(err, ErrLocked) {
			if waited {
				turns.Withdraw(path, turns.ReaderToken())
			}
			return st, err
		}
		// A store that cannot be written cannot be asked for, nor can one
		// whose marker is not a regular file: say so if the wait fails.
		askErr := turns.Ask(path, turns.ReaderToken())
		if !waited && onWait != nil {
			onWait(err)
		}
		waited = true
		if werr := b.Wait(ctx); werr != nil {
			turns.Withdraw(path, turns.ReaderToken())
			if askErr != nil {
				return nil, fmt.Errorf("%w (gave up waiting: %w; could not ask the holder to let go: %w)", err, werr, askErr)
			}
			return nil, fmt.Errorf("%w (gave up waiting: %w)", err, werr)
		}
	}
}

// openMerged opens the store at path (dir, as given); for a read-only
// open, it first recovers a crashed store and merges a spool, or reads
// them without writing where the store cannot be written (a read-write
// open merges itself).
func openMerged(dir, path string, c config) (*Store, error) {
	if !c.readOnly {
		return openAt(dir, path, c)
	}
	removeStaleReplays(c.handle)
	// Badger's read-only open of a crashed store fails only after mapping
	// its log, which it then never unmaps: go around it when the log is
	// known to be there.
	crashed := hasLogs(path)
	canWrite := storedir.Writable(path)
	if canWrite && (crashed || spool.Has(path)) {
		// A file system too full for Badger to write safely is one this
		// reader cannot write either.
		if err := mergeAt(dir, path, c); errors.Is(err, ErrNoSpace) {
			canWrite = false
		} else if err != nil {
			return nil, err
		}
	}
	var st *Store
	var err error
	if crashed && !canWrite {
		st, err = openReplayed(dir, path, c)
	} else {
		st, err = openAt(dir, path, c)
	}
	if errors.Is(err, ErrNeedsRecovery) {
		// A writer crashed since hasLogs looked.
		if canWrite {
			if err := mergeAt(dir, path, c); errors.Is(err, ErrNoSpace) {
				canWrite = false
			} else if err != nil {
				return nil, err
			}
		}
		if canWrite {
			st, err = openAt(dir, path, c)
		} else {
			st, err = openReplayed(dir, path, c)
		}
	}
	if err != nil || canWrite {
		return st, err
	}
	st.readSpool(c.handle)
	return st, nil
}

// hasLogs reports whether the store at path has write-ahead logs (.mem):
// Badger removes them when it closes a store, so a store that has them is
// open, or its writer crashed.
func hasLogs(path string) bool {
	logs, _ := filepath.Glob(filepath.Join(path, "*"+badgerfmt.MemFileExt))
	return len(logs) > 0
}

// mergeAt opens the existing store at path (dir, as given) read-write,
// which replays a crashed writer's log and merges the spool, and closes
// it.
func mergeAt(dir, path string, c config) error {
	c.readOnly = false
	st, err := openAt(dir, path, c)
	if err != nil {
		return err
	}
	return st.Close()
}

// A reader that cannot write.
//
// Reading a store must not need writing it: a store is read from
// read-only media (a mounted artifact, a snapshot), or is another user's.
// Two things there would need a write. A crashed writer's log (.mem) is
// replayed by Badger's read-write open, and its read-only open refuses a
// log that needs it ("Log truncate required"): the log is a preallocated
// file, and Badger's read-only open accepts only one that ends where its
// last whole transaction does. So the reader links the store's tables,
// value logs, MANIFEST and KEYREGISTRY from a temporary directory (Badger
// reads them read-only, as they are), copies the logs there, cuts each
// copy where Badger says its last transaction ends, and opens that
// directory read-only: Badger replays the logs into memory itself. What is
// copied is bounded (maxReplay): a store's logs are a few memtables. And
// the spool, which a writer merges, is read into memory (maxSpoolRead) and
// yielded with the store's entries.

const (
	// maxReplay bounds the logs a reader copies to replay them: a store
	// has a log per memtable (two of 16 MiB as Badger maps them, here).
	maxReplay = 256 << 20
	// maxSpoolRead bounds the spooled entries a reader keeps in memory.
	maxSpoolRead = 256 << 20
)

// openReplayed opens the crashed store at path (dir, as given) read-only
// without writing it: see above. It holds the store's lock, shared, until
// the Store closes, so no writer changes the files it reads.
func openReplayed(dir, path string, c config) (*Store, error) {
	if err := storedir.Present(path); err != nil {
		return nil, err
	}
	if err := checkBeforeOpen(path, true, true); err != nil {
		return nil, err
	}
	unlock, err := storedir.Lock(path, false)
	if err != nil {
		return nil, err
	}
	tmp, releaseTmp, err := newReplayDir()
	if err != nil {
		unlock()
		return nil, fmt.Errorf("otelrecords: open store %s without writing it: %w", dir, err)
	}
	release := func() {
		releaseTmp()
		unlock()
	}
	db, err := replay(path, tmp, c)
	if err != nil {
		release()
		return nil, fmt.Errorf("otelrecords: open store %s without writing it (its writer crashed, and it cannot be written here): %w", dir, err)
	}
	s := newStore(db, dir, path, true)
	s.release = release
	return s, nil
}

// truncateText matches what Badger's read-only open says of a log that
// goes on past its last whole transaction: which log, and where it ends.
var truncateText = regexp.MustCompile(`while opening fid: (\d+) .*end offset: (\d+) < size: \d+`)

// replay builds in tmp the store at path as Badger's read-only open takes
// it (see above), and opens it.
func replay(path, tmp string, c config) (*badger.DB, error) {
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	logs := map[uint64]string{}
	var copied int64
	for _, de := range des {
		name := de.Name()
		if emptyLog(de) {
			continue // a killed writer's, holding nothing, which Badger cannot open
		}
		switch {
		case strings.HasSuffix(name, badgerfmt.MemFileExt):
			id, ok := badgerfmt.ParseFileID(name, badgerfmt.MemFileExt)
			if !ok {
				continue
			}
			n, err := copyLog(root, name, filepath.Join(tmp, name), maxReplay-copied)
			if err != nil {
				return nil, err
			}
			copied += n
			logs[id] = name
		case name == badger.ManifestFilename, name == badger.KeyRegistryFileName,
			strings.HasSuffix(name, badgerfmt.TableFileExt), strings.HasSuffix(name, badgerfmt.ValueLogFileExt):
			// Checked to be regular files (checkFiles), and read only.
			if err := os.Symlink(filepath.Join(path, name), filepath.Join(tmp, name)); err != nil {
				return nil, err
			}
		}
	}
	ro := c
	ro.readOnly = true
	for range len(logs) + 1 {
		db, err := openBadger(badgerOptions(tmp, ro, nil))
		if err == nil {
			return db, nil
		}
		m := truncateText.FindStringSubmatch(err.Error())
		if m == nil {
			return nil, err
		}
		id, _ := strconv.ParseUint(m[1], 10, 64)
		end, _ := strconv.ParseInt(m[2], 10, 64)
		name, ok := logs[id]
		if !ok {
			return nil, err
		}
		if err := os.Truncate(filepath.Join(tmp, name), end); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("Badger still asks for its logs to be truncated")
}

// copyLog copies the log name in root to the new file to, and returns its
// size: only a regular file, of at most limit bytes.
func copyLog(root *os.Root, name, to string, limit int64) (int64, error) {
	in, err := storefs.Open(root, name, os.O_RDONLY, 0, limit)
	if err != nil {
		return 0, fmt.Errorf("copy its log to replay it (a reader copies at most %d MiB of logs): %w", maxReplay>>20, err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, limit))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// readSpool reads the spool of a store this process cannot write into
// memory, for Scan to yield with the store's entries, and counts its
// entries in Unmerged. A file the store would refuse, like one that does
// not decode, is reported to handle and skipped; so is a spool too large
// to hold in memory, whole.
func (s *Store) readSpool(handle func(error)) {
	files, err := spool.Read(s.path, maxSpoolRead, handle)
	if err != nil {
		handle(err)
		return
	}
	latest := map[string][]byte{}
	for _, f := range files {
		if err := checkEntries(f.Entries); err != nil {
			handle(fmt.Errorf("otelrecords: spool file %s cannot be written to the store: %w", filepath.Join(spool.Dir(s.path), f.Name), err))
			continue
		}
		for _, e := range f.Entries {
			latest[string(e.Key)] = e.Value // a later file wins, as in a merge
			s.unmerged++
		}
	}
	s.spooled = make([]sessions.Entry, 0, len(latest))
	for k, v := range latest {
		if len(v) == 0 {
			v = nil // as Scan yields an empty value
		}
		s.spooled = append(s.spooled, sessions.Entry{Key: []byte(k), Value: v})
	}
	slices.SortFunc(s.spooled, func(a, b sessions.Entry) int { return bytes.Compare(a.Key, b.Key) })
}
