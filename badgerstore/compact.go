package badgerstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// compactKey is written and dropped again by Compact to make Badger flush
// its memtable and compact level 0. It lies under the records root but does
// not parse as a key of ours (its kind would be empty), so a reader skips
// it and a prune leaves it alone should a crash ever leave it behind.
const compactKey = "records/v1/\x00compact"

// valueLogGCRatio is the share of a value-log file that must be garbage
// for Compact to rewrite it: Badger's documented choice for a thorough GC.
const valueLogGCRatio = 0.5

// Compact gives back the disk space that deleted records still hold, and
// returns the store's size before and after, in bytes (see below).
//
// Deleting a key in Badger writes a tombstone; the bytes of the key, its
// value and the tombstone stay on disk until a compaction meets them at the
// bottom of the tree, and Badger compacts only when its levels outgrow
// their targets. So a prune gives space back only eventually, and a store
// of many short sessions keeps many small level-0 tables. Compact forces
// it: it flushes the memtable and compacts level 0 (which Badger's Flatten
// skips while level 0 holds fewer tables than its trigger), flattens every
// level into one, where deleted keys and their tombstones are dropped, then
// rewrites value-log files that are mostly garbage until none is left.
//
// The sizes count the store's tables and its sealed value-log files. The
// value-log file being written is left out: Badger preallocates it, so its
// size says nothing of what it holds, and Compact never gives it back.
//
// Compact needs a read-write Store (it fails with an error matching
// ErrReadOnly on a read-only one) and works best when nothing else writes
// meanwhile, as with the records command, which holds the store's lock.
// It can take a while on a large store; operations started meanwhile
// wait for Badger as usual.
func (s *Store) Compact() (before, after int64, err error) {
	if err := s.begin(); err != nil {
		return 0, 0, err
	}
	defer s.end()
	if s.readOnly {
		return 0, 0, fmt.Errorf("%w: cannot compact %s", ErrReadOnly, s.dir)
	}
	if before, err = s.diskSize(); err != nil {
		return 0, 0, err
	}
	if err := s.compactLevel0(); err != nil {
		return before, 0, fmt.Errorf("otelrecords: compact %s: %w", s.dir, err)
	}
	if err := s.db.Flatten(numCompactors); err != nil {
		return before, 0, fmt.Errorf("otelrecords: compact %s: %w", s.dir, err)
	}
	for {
		err := s.db.RunValueLogGC(valueLogGCRatio)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) {
			break // nothing left worth rewriting, or a GC already runs
		}
		if err != nil {
			return before, 0, fmt.Errorf("otelrecords: compact %s: value log: %w", s.dir, err)
		}
	}
	after, err = s.diskSize()
	return before, after, err
}

// compactLevel0 flushes the memtable and compacts every level-0 table into
// the level below. Badger offers no call for that alone; DropPrefix does
// both on its way to dropping a prefix, and a prefix with nothing under it
// is skipped before the flush. So one throwaway key is written and its
// prefix dropped.
func (s *Store) compactLevel0() error {
	key := []byte(compactKey)
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(key, nil) }); err != nil {
		return err
	}
	return s.db.DropPrefix(key)
}

// diskSize returns the bytes of the store's tables (.sst) and of its value
// log (.vlog) but the newest file, which is the one being written.
func (s *Store) diskSize() (int64, error) {
	entries, err := os.ReadDir(s.path)
	if err != nil {
		return 0, fmt.Errorf("otelrecords: size of %s: %w", s.dir, err)
	}
	var total, newestLog int64
	newestID := -1
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if ext != ".sst" && ext != ".vlog" {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted by a compaction since ReadDir
		} else if err != nil {
			return 0, fmt.Errorf("otelrecords: size of %s: %w", s.dir, err)
		}
		total += info.Size()
		if ext == ".vlog" {
			id, err := strconv.Atoi(strings.TrimSuffix(name, ext))
			if err == nil && id > newestID {
				newestID, newestLog = id, info.Size()
			}
		}
	}
	return total - newestLog, nil
}
