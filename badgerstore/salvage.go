package badgerstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/keys"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/otelrecords/otelrecords/internal/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

// Recovery from a damaged store, for `records doctor`.
//
// Badger cannot open a store with a damaged file, and would lose more than
// the damage if it could (it truncates a log at the first bad entry). So
// the store is read here without Badger's database code: every table the
// MANIFEST lists (every table in the directory when the MANIFEST itself is
// damaged) block by block, skipping the blocks that do not read; every log
// (.mem) entry by entry, stepping over damaged stretches to the next
// intact entry; and each value kept in the value log (.vlog) through its
// pointer, checksum included. Of each key, the newest version wins, as in
// Badger; a key whose newest version is a deletion stays deleted. What is
// left is written into a new store.

// A Recovery says what Recover did.
type Recovery struct {
	// Dir is the store's directory, holding the new store.
	Dir string
	// Aside is where the damaged store was moved, untouched; "" when the
	// store was healthy and nothing was done.
	Aside string
	// Damage is what was found wrong, one entry per damaged file.
	Damage []*CorruptError
	// Kept counts what the new store holds, by kind ("sessions" for
	// session rows; keys otelrecords does not know count under "").
	Kept map[string]int
	// Lost says, for people, what could not be read: blocks of tables,
	// stretches of logs, values of the value log.
	Lost []string
	// LostEntries is how many entries are known to be lost: a lower bound,
	// since a table whose index is damaged cannot say how many it held.
	LostEntries int
	// Spool reports whether a spool (records set aside for a busy store)
	// was carried over into the new store, to be merged by its next
	// opener.
	Spool bool
}

// Recover moves the damaged store in dir aside, to
// dir.damaged-<UTC time>, creates a new store in dir, and copies into it
// every record and session row it can still read from the damaged one,
// which it never changes. A healthy store (Verify finds nothing) is left
// as it is, and the Recovery says so (Aside is ""). Recover holds the
// store's lock while it works, and fails with an error matching ErrLocked
// when another process has the store open.
func Recover(dir string) (*Recovery, error) {
	unlock, err := lockDir(dir, true)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("otelrecords: no store at %s: %w", dir, err)
		}
		return nil, err
	}
	defer unlock()
	damage, err := check(dir, true)
	if err != nil {
		return nil, fmt.Errorf("otelrecords: check store %s: %w", dir, err)
	}
	rec := &Recovery{Dir: dir, Damage: damage, Kept: map[string]int{}}
	if len(damage) == 0 {
		if err := storeThere(dir); err != nil {
			return nil, err
		}
		return rec, nil
	}

	aside := dir + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s.damaged-%s-%d", dir, time.Now().UTC().Format("20060102T150405Z"), i)
	}
	// The lock is on the directory itself, so it moves with it: no one
	// opens the damaged store while it is read.
	if err := os.Rename(dir, aside); err != nil {
		return nil, fmt.Errorf("otelrecords: move the damaged store aside: %w", err)
	}
	rec.Aside = aside
	// Paths in the report name the files where they now are.
	for _, d := range rec.Damage {
		d.File = filepath.Join(aside, filepath.Base(d.File))
	}

	kept, err := salvage(aside, rec)
	if err != nil {
		return rec, err
	}
	if err := writeRecovered(dir, kept, rec); err != nil {
		return rec, err
	}
	// A spool holds whole records that never reached Badger: give it to
	// the new store, whose next opener merges it.
	if _, err := os.Stat(spool.Dir(aside)); err == nil {
		if err := os.Rename(spool.Dir(aside), spool.Dir(dir)); err != nil {
			return rec, fmt.Errorf("otelrecords: carry the spool over to the new store: %w", err)
		}
		rec.Spool = true
	}
	return rec, nil
}

// recreateWait bounds how long Recover waits for a process that opened the
// new store meanwhile (asking it to yield, as any waiting opener does).
const recreateWait = 10 * time.Second

// writeRecovered creates the new store in dir and writes the entries into
// it, waiting a little for a process that created it meanwhile.
func writeRecovered(dir string, kept []sessions.Entry, rec *Recovery) error {
	ctx, cancel := context.WithTimeout(context.Background(), recreateWait)
	defer cancel()
	s, err := OpenWait(ctx, dir, nil, WithErrorHandler(nil))
	if err != nil {
		return fmt.Errorf("otelrecords: create the new store (the damaged one is safe at %s): %w", rec.Aside, err)
	}
	const batch = 4096
	for i := 0; i < len(kept); i += batch {
		if err := s.Write(kept[i:min(i+batch, len(kept))]); err != nil {
			_ = s.Close()
			return fmt.Errorf("otelrecords: write the new store (the damaged one is safe at %s): %w", rec.Aside, err)
		}
	}
	for _, e := range kept {
		kind, _, _, err := keys.Parse(e.Key)
		if err != nil {
			kind = ""
		}
		rec.Kept[kind]++
	}
	return s.Close()
}

// version is what salvage knows of a key: its newest version so far.
type version struct {
	ts      uint64
	meta    byte
	value   []byte // inline, or a value pointer when meta says so
	expires uint64
}

// salvage reads what it can of the store in dir (never changing it),
// notes in rec what it could not, and returns the live entries in key
// order.
func salvage(dir string, rec *Recovery) ([]sessions.Entry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	newest := map[string]version{}
	add := func(key []byte, v version) {
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
	if m, bad := checkManifest(filepath.Join(dir, badger.ManifestFilename)); bad == nil {
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
		case strings.HasSuffix(name, sstFileExt):
			id, ok := table.ParseFileID(name)
			c, isListed := compression[id]
			if !ok || (listed && !isListed) {
				continue // Badger would delete it: a table a compaction replaced
			}
			salvageTable(path, id, c, !listed, add, rec)
		case strings.HasSuffix(name, memFileExt):
			logs = append(logs, path)
		case strings.HasSuffix(name, vlogFileExt):
			vlogs = append(vlogs, path)
		}
	}
	for _, path := range logs {
		salvageLog(path, add, rec)
	}

	values := openValueLogs(vlogs)
	defer values.close()
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	now := uint64(time.Now().Unix())
	out := make([]sessions.Entry, 0, len(keys))
	for _, k := range keys {
		v := newest[k]
		switch {
		case strings.HasPrefix(k, "!badger!"):
			continue // Badger's own bookkeeping
		case v.meta&bitDelete != 0, v.expires != 0 && v.expires <= now:
			continue
		}
		value := v.value
		if v.meta&bitValuePointer != 0 {
			var err error
			if value, err = values.read(y.KeyWithTs([]byte(k), v.ts), v.value); err != nil {
				rec.LostEntries++
				rec.Lost = append(rec.Lost, fmt.Sprintf("the value of %s: %v", describeKey([]byte(k)), err))
				continue
			}
		}
		out = append(out, sessions.Entry{Key: []byte(k), Value: value})
	}
	return out, nil
}

// describeKey names a key for people: the record or session row it
// holds, or the key itself, quoted.
func describeKey(k []byte) string {
	kind, session, seq, err := keys.Parse(k)
	switch {
	case err != nil:
		return fmt.Sprintf("key %q", k)
	case kind == keys.SessionsKind:
		return fmt.Sprintf("the session row of %d", session)
	}
	return fmt.Sprintf("a %q record (session %d, seq %d)", kind, session, seq)
}

// Bits of an entry's meta byte (Badger's value.go).
const (
	bitDelete       = 1 << 0
	bitValuePointer = 1 << 1
	bitTxn          = 1 << 6
	bitFinTxn       = 1 << 7
)

// salvageTable hands every entry of the table at path that reads to add,
// block by block, and notes in rec what does not read. Without a known
// compression it tries each of Badger's.
func salvageTable(path string, id uint64, c options.CompressionType, guess bool, add func([]byte, version), rec *Recovery) {
	name := filepath.Base(path)
	err := withMapped(path, func(_ *os.File, data []byte) error {
		if len(data) == 0 {
			return errors.New("empty")
		}
		tbl, err := openTable(data, id, c)
		if guess {
			for _, other := range []options.CompressionType{options.Snappy, options.None, options.ZSTD} {
				if err == nil {
					break
				}
				tbl, err = openTable(data, id, other)
			}
		}
		if err != nil {
			return err
		}
		read, bad := 0, []int{}
		err = guard(func() error {
			bases := tbl.KeySplits(1<<31-1, nil)
			it := tbl.NewIterator(table.NOCACHE)
			defer it.Close()
			for i, base := range bases {
				it.Seek([]byte(base))
				if !it.Valid() || !bytes.Equal(it.Key(), []byte(base)) {
					bad = append(bad, i+1)
					continue
				}
				for ; it.Valid(); it.Next() {
					if i+1 < len(bases) && y.CompareKeys(it.Key(), []byte(bases[i+1])) >= 0 {
						break
					}
					vs := it.Value()
					add(it.Key(), version{meta: vs.Meta, value: vs.Value, expires: vs.ExpiresAt})
					read++
				}
			}
			return nil
		})
		if len(bad) > 0 || err != nil {
			lost := max(int(tbl.KeyCount())-read, 0)
			rec.LostEntries += lost
			what := fmt.Sprintf("%d of %d blocks of %s (%d entries)", len(bad), len(tbl.KeySplits(1<<31-1, nil)), name, lost)
			if err != nil {
				what += ": " + err.Error()
			}
			rec.Lost = append(rec.Lost, what)
		}
		return nil
	})
	if err != nil {
		rec.Lost = append(rec.Lost, fmt.Sprintf("all of %s (its index does not read: %v)", name, err))
	}
}

// salvageLog hands every intact entry of a .mem log to add, stepping over
// damaged stretches to the next intact entry, and notes in rec the bytes
// it stepped over.
func salvageLog(path string, add func([]byte, version), rec *Recovery) {
	name := filepath.Base(path)
	err := withMapped(path, func(f *os.File, data []byte) error {
		if len(data) < logHeaderSize || binary.BigEndian.Uint64(data) != 0 {
			return errors.New("its header does not read")
		}
		end := int(dataEnd(f, int64(len(data))))
		return guard(func() error {
			off := logHeaderSize
			for off < len(data) {
				e, err := decodeLogEntry(data[off:])
				if err == nil {
					if !bytes.HasPrefix(e.key, []byte("!badger!")) {
						add(e.key, version{meta: e.meta &^ (bitTxn | bitFinTxn), value: e.value})
					}
					off += e.size
					continue
				}
				next := resync(data[:end], off+1)
				if next < 0 {
					if errors.Is(err, errLogShort) || (errors.Is(err, errLogBad) && (e.size == 0 || data[off+e.size-1] != 0)) {
						rec.Lost = append(rec.Lost, fmt.Sprintf("bytes %d to %d of %s (cut short or overwritten)", off, min(end, len(data)), name))
					}
					return nil
				}
				rec.Lost = append(rec.Lost, fmt.Sprintf("bytes %d to %d of %s (overwritten)", off, next, name))
				off = next
			}
			return nil
		})
	})
	if err != nil {
		rec.Lost = append(rec.Lost, fmt.Sprintf("all of %s (%v)", name, err))
	}
}

// valueLogs reads values through Badger's value pointers.
type valueLogs struct {
	files map[uint32][]byte
	close func()
}

// openValueLogs maps every .vlog file, for reads until close.
func openValueLogs(paths []string) *valueLogs {
	v := &valueLogs{files: map[uint32][]byte{}}
	var closers []func()
	for _, path := range paths {
		id, ok := parseFileID(filepath.Base(path), vlogFileExt)
		if !ok || id > 1<<32-1 {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() == 0 {
			f.Close()
			continue
		}
		// A map outlives the descriptor it was made from.
		data, err := z.Mmap(f, false, fi.Size())
		f.Close()
		if err != nil {
			continue
		}
		v.files[uint32(id)] = data
		closers = append(closers, func() { _ = z.Munmap(data) })
	}
	v.close = func() {
		for _, c := range closers {
			c()
		}
	}
	return v
}

// read returns the value a pointer (Badger's valuePointer: file id,
// length and offset as 32-bit integers in the machine's byte order) leads
// to, checking that the entry there is intact and is key's.
func (v *valueLogs) read(key, ptr []byte) (value []byte, err error) {
	if len(ptr) != 12 {
		return nil, fmt.Errorf("a value pointer of %d bytes", len(ptr))
	}
	fid := binary.NativeEndian.Uint32(ptr[0:])
	n := binary.NativeEndian.Uint32(ptr[4:])
	off := binary.NativeEndian.Uint32(ptr[8:])
	data, ok := v.files[fid]
	name := fmt.Sprintf("%06d%s", fid, vlogFileExt)
	switch {
	case !ok:
		return nil, fmt.Errorf("%s is missing", name)
	case uint64(off)+uint64(n) > uint64(len(data)):
		return nil, fmt.Errorf("%s ends before byte %d", name, uint64(off)+uint64(n))
	}
	err = guard(func() error {
		e, err := decodeLogEntry(data[off : off+n])
		if err != nil {
			return fmt.Errorf("the entry at byte %d of %s does not read", off, name)
		}
		if !bytes.Equal(e.key, key) {
			return fmt.Errorf("the entry at byte %d of %s is another key's", off, name)
		}
		value = bytes.Clone(e.value)
		return nil
	})
	return value, err
}
