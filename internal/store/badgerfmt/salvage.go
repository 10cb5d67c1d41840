package badgerfmt

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
)

// An Entry is a key and its value, as a store's user wrote them.
type Entry struct {
	// Key is the key without the version Badger appends to it.
	Key []byte
	// Value is the value itself, read through its value pointer when
	// Badger kept it in the value log.
	Value []byte
}

// Salvaged is what Salvage read of a damaged store.
type Salvaged struct {
	// Entries are the live entries it could read, in key order: of each
	// key its newest version, unless that is a deletion or has expired.
	Entries []Entry
	// Lost says, for people, what could not be read: blocks of tables,
	// stretches of logs, values of the value log.
	Lost []string
	// LostEntries is how many entries are known to be lost: a lower bound,
	// since a table whose index is damaged cannot say how many it held.
	LostEntries int
}

// keyVersion is what Salvage knows of a key: its newest version so far.
type keyVersion struct {
	ts      uint64
	meta    byte
	value   []byte // inline, or a value pointer when meta says so
	expires uint64
}

// Salvage reads what it can of the store in dir, without Badger's
// database code and without changing a byte of it, for a store Badger
// cannot open, or would lose more of than the damage if it could (it
// truncates a log at the first bad entry). It reads every table the
// MANIFEST lists (every table in the directory when the MANIFEST itself
// is damaged) block by block, skipping the blocks that do not read; every
// write-ahead log (.mem) entry by entry, stepping over damaged stretches
// to the next intact entry; and each value kept in the value log (.vlog)
// through its pointer, checksum included. Of each key, the newest version
// wins, as in Badger; a key whose newest version is a deletion stays
// deleted, and one whose newest version has expired stays hidden.
//
// describe names a key for people, in what Lost says of a value that does
// not read; the key layout is the caller's, not Badger's.
//
// The caller holds the store's lock, or has moved the store where no one
// opens it. Salvage refuses to read anything, with the error of
// [CheckVersion], when the program links a Badger other than
// [BadgerVersion]. A directory that cannot be listed gives an error.
func Salvage(dir string, describe func(key []byte) string) (*Salvaged, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s := &Salvaged{}
	newest := map[string]keyVersion{}
	add := func(key []byte, v keyVersion) {
		if len(key) <= 8 {
			return
		}
		v.ts = y.ParseTs(key)
		k := y.ParseKey(key)
		if old, ok := newest[string(k)]; ok && old.ts >= v.ts {
			return
		}
		v.value = bytes.Clone(v.value)
		newest[string(k)] = v
	}

	// Tables: those the MANIFEST lists, at the compression it records; or,
	// without a MANIFEST that reads, every table, at whichever compression
	// opens it.
	compression := map[uint64]options.CompressionType{}
	listed := false
	if m, _, bad := checkManifest(filepath.Join(dir, badger.ManifestFilename)); bad == nil {
		listed = true
		for id, tm := range m.Tables {
			compression[id] = tm.Compression
		}
	}
	var logs, vlogs []string
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		switch {
		case strings.HasSuffix(name, TableFileExt):
			id, ok := table.ParseFileID(name)
			c, isListed := compression[id]
			if !ok || (listed && !isListed) {
				continue // Badger would delete it: a table a compaction replaced
			}
			salvageTable(path, id, c, !listed, add, s)
		case strings.HasSuffix(name, MemFileExt):
			logs = append(logs, path)
		case strings.HasSuffix(name, ValueLogFileExt):
			vlogs = append(vlogs, path)
		}
	}
	for _, path := range logs {
		salvageLog(path, add, s)
	}

	values := openValueLogs(vlogs)
	defer values.close()
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	now := uint64(time.Now().Unix())
	s.Entries = make([]Entry, 0, len(keys))
	for _, k := range keys {
		v := newest[k]
		switch {
		case strings.HasPrefix(k, badgerKeyPrefix):
			continue // Badger's own bookkeeping
		case v.meta&bitDelete != 0, v.expires != 0 && v.expires <= now:
			continue
		}
		value := v.value
		if v.meta&bitValuePointer != 0 {
			var err error
			if value, err = values.read(y.KeyWithTs([]byte(k), v.ts), v.value); err != nil {
				s.LostEntries++
				s.Lost = append(s.Lost, fmt.Sprintf("the value of %s: %v", describe([]byte(k)), err))
				continue
			}
		}
		s.Entries = append(s.Entries, Entry{Key: []byte(k), Value: value})
	}
	return s, nil
}
