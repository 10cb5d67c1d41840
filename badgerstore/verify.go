package badgerstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// ErrCorrupt is matched (with errors.Is) by the error Open and Verify give
// for a store with a damaged file. The error is a *CorruptError, whose
// message names the file.
var ErrCorrupt = errors.New("otelrecords: store damaged")

// CorruptError is the damage found in one file of a store.
type CorruptError struct {
	// File is the path of the damaged file.
	File string
	// Problem says what is wrong with it, for people.
	Problem string
	// Err is the error that revealed the damage (Badger's, or the file
	// system's), or nil.
	Err error
}

// Error names the file, says what is wrong, and how to recover.
func (e *CorruptError) Error() string {
	var b strings.Builder
	b.WriteString("otelrecords: store damaged: ")
	b.WriteString(e.File)
	b.WriteString(": ")
	b.WriteString(e.Problem)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	b.WriteString(" (`records doctor --dir ")
	b.WriteString(filepath.Dir(e.File))
	b.WriteString("` moves the store aside and keeps what is readable)")
	return b.String()
}

// Unwrap makes the error match ErrCorrupt, and its cause.
func (e *CorruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}

func damaged(file, problem string, err error) *CorruptError {
	return &CorruptError{File: file, Problem: problem, Err: err}
}

// Why the store is checked before Badger sees it: Badger opens tables in
// goroutines of its own, where a panic on a damaged table (a truncated
// .sst, say) ends the host process and no recover can help; and some damage
// it accepts without a word and then loses data over — a MANIFEST cut short
// makes it delete the tables it no longer lists, a log damaged in the
// middle is truncated there. So every file Badger's Open reads is read
// here first, with Badger's own table code run in a goroutine of ours,
// under recover, and a damaged file is reported by name instead.
//
// What Open's check reads is what Badger's Open reads, so that it costs
// about as much again and no more: the MANIFEST, the index and last block
// of every table it lists, and every entry of the logs (.mem files only
// exist after a crash; .vlog files hold values of 1 MiB or more, rare in
// records). The data blocks of tables are read only by Verify (and so by
// `records doctor`): reading them all would make Open cost as much as
// reading the whole store.

// Badger's file names and layout facts the check depends on (Badger v4).
const (
	memFileExt  = ".mem"
	vlogFileExt = ".vlog"
	sstFileExt  = ".sst"
	// logHeaderSize is the header of a .mem or .vlog file: the id of the
	// encryption key (8 bytes, 0 when unencrypted) and a base IV (12).
	logHeaderSize = 20
	// maxKeyLen is the longest key (with its 8-byte version) Badger's log
	// reader accepts.
	maxKeyLen = 1 << 16
	// keyRegistrySize is the size of Badger's KEYREGISTRY for a store
	// without encryption.
	keyRegistrySize = 28
	// maxLevels is Badger's default number of LSM levels, which Open keeps.
	maxLevels = 7
	// Known bits of an entry's meta byte (delete, value pointer, discard
	// earlier versions, merge, txn, end of txn): an entry found while
	// looking past damage with other bits set is not one Badger wrote.
	knownMetaBits = 1 | 2 | 4 | 8 | 64 | 128
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkBeforeOpen checks that Badger can open the store in dir without
// harming the process: it returns a *CorruptError for the first damaged
// file Badger's Open would read, and for a read-write open an error
// matching ErrNoSpace when the file system is nearly full (space.go). It
// holds the store's lock while it reads, shared for a read-only open and
// exclusive otherwise, so that a live writer's files are never mistaken
// for damaged ones; when the lock is busy it checks nothing and leaves
// Badger to report the busy lock.
func checkBeforeOpen(dir string, readOnly bool) error {
	unlock, err := lockDir(dir, !readOnly)
	if err != nil {
		return nil // busy, or not a directory: Badger says which
	}
	defer unlock()
	if !readOnly {
		if err := checkSpace(dir); err != nil {
			return err
		}
	}
	found, err := check(dir, false)
	if err != nil || len(found) == 0 {
		return nil // a directory that cannot be read is Badger's to report
	}
	return found[0]
}

// Verify reads every file of the store in dir that Badger reads — the
// MANIFEST, every block of every table it lists (checksums included), and
// every entry of the logs — without opening the store, and returns one
// *CorruptError for each damaged file, or none. It is safe on any bytes:
// nothing it reads can crash the process. It holds the store's lock
// (shared) while it reads, and fails with an error matching ErrLocked when
// a writer holds it.
//
// A directory that holds no store gives an error matching fs.ErrNotExist.
func Verify(dir string) ([]*CorruptError, error) {
	unlock, err := lockDir(dir, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	found, err := check(dir, true)
	if err == nil && len(found) == 0 {
		err = storeThere(dir)
	}
	return found, err
}

// storeThere returns an error matching fs.ErrNotExist when dir holds no
// store: no MANIFEST (a directory with data files but no MANIFEST is a
// damaged store, which check reports).
func storeThere(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("otelrecords: no store at %s: %w", dir, fs.ErrNotExist)
	}
	return nil
}

// check checks the store in dir, reading every block of every table when
// full is set, and returns the damage it finds, ordered by file name.
func check(dir string, full bool) ([]*CorruptError, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var (
		found        []*CorruptError
		logs         []string
		hasManifest  bool
		hasDataFiles bool
	)
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == badger.ManifestFilename:
			hasManifest = true
		case strings.HasSuffix(name, sstFileExt):
			hasDataFiles = true
		case strings.HasSuffix(name, memFileExt), strings.HasSuffix(name, vlogFileExt):
			hasDataFiles = true
			logs = append(logs, filepath.Join(dir, name))
		}
	}
	manifestPath := filepath.Join(dir, badger.ManifestFilename)
	if bad := checkKeyRegistry(filepath.Join(dir, badger.KeyRegistryFileName)); bad != nil {
		found = append(found, bad)
	}
	var tables []tableJob
	if !hasManifest {
		if hasDataFiles {
			// Badger would start an empty store here, and delete every
			// table it finds as unlisted.
			found = append(found, damaged(manifestPath, "missing, though the directory holds tables or logs", nil))
		}
	} else if m, bad := checkManifest(manifestPath); bad != nil {
		found = append(found, bad)
	} else {
		tables, found = listTables(dir, m, found)
	}

	// Tables and logs are independent: read them in parallel, as Badger
	// does, bounded so a large store does not start a goroutine per file.
	jobs := make(chan func() *CorruptError)
	results := make(chan *CorruptError)
	workers := min(runtime.GOMAXPROCS(0), 4)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for job := range jobs {
				if bad := job(); bad != nil {
					results <- bad
				}
			}
		})
	}
	go func() {
		for _, t := range tables {
			jobs <- func() *CorruptError { return checkTable(t, full) }
		}
		for _, path := range logs {
			jobs <- func() *CorruptError { return checkLog(path) }
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	for bad := range results {
		found = append(found, bad)
	}
	slices.SortStableFunc(found, func(a, b *CorruptError) int { return strings.Compare(a.File, b.File) })
	return found, nil
}

// checkManifest replays the MANIFEST with Badger's own code, and also
// refuses one that ends inside an entry: Badger would cut that entry off
// and forget the tables it listed, then delete their files as unlisted.
// Badger appends each entry with one write and a sync, so a kill leaves
// none half-written.
func checkManifest(path string) (badger.Manifest, *CorruptError) {
	f, err := os.Open(path)
	if err != nil {
		return badger.Manifest{}, damaged(path, "cannot be read", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return badger.Manifest{}, damaged(path, "cannot be read", err)
	}
	var (
		m   badger.Manifest
		end int64
	)
	err = guard(func() (err error) {
		// A zero Options has no logger: Badger's warnings are dropped.
		m, end, err = badger.ReplayManifestFile(f, 0, badger.Options{})
		return err
	})
	if err != nil {
		return badger.Manifest{}, damaged(path, "does not replay", err)
	}
	if end != fi.Size() {
		return badger.Manifest{}, damaged(path, fmt.Sprintf("ends inside an entry (the last whole one ends at byte %d of %d): it was cut short or overwritten", end, fi.Size()), nil)
	}
	return m, nil
}

type tableJob struct {
	path        string
	id          uint64
	compression options.CompressionType
}

// listTables returns the tables the manifest lists, in id order, adding
// to found those that cannot be opened at all.
func listTables(dir string, m badger.Manifest, found []*CorruptError) ([]tableJob, []*CorruptError) {
	ids := make([]uint64, 0, len(m.Tables))
	for id := range m.Tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var jobs []tableJob
	for _, id := range ids {
		tm := m.Tables[id]
		path := table.NewFilename(id, dir)
		switch _, err := os.Stat(path); {
		case errors.Is(err, fs.ErrNotExist):
			found = append(found, damaged(path, "listed in the MANIFEST but missing", nil))
		case err != nil:
			found = append(found, damaged(path, "cannot be read", err))
		case tm.KeyID != 0:
			found = append(found, damaged(path, "the MANIFEST says it is encrypted, and otelrecords never encrypts", nil))
		case int(tm.Level) >= maxLevels:
			// Badger indexes its levels by this number without a check.
			found = append(found, damaged(path, fmt.Sprintf("the MANIFEST places it at level %d, beyond the last (%d)", tm.Level, maxLevels-1), nil))
		default:
			jobs = append(jobs, tableJob{path: path, id: id, compression: tm.Compression})
		}
	}
	return jobs, found
}

// checkTable opens a table with Badger's table code, as Badger's Open
// does (its index, with the index's checksum, and its last block), and,
// when full is set, reads and checksums every block.
func checkTable(t tableJob, full bool) *CorruptError {
	problem := "cannot be read"
	err := withMapped(t.path, func(_ *os.File, data []byte) error {
		if len(data) == 0 {
			problem = "empty"
			return errors.New("no bytes")
		}
		problem = "its index or last block does not read"
		tbl, err := openTable(data, t.id, t.compression)
		if err != nil || !full {
			return err
		}
		problem = "a data block does not read"
		return eachBlock(tbl, nil)
	})
	if err != nil {
		return damaged(t.path, problem, err)
	}
	return nil
}

// openTable opens a table held in data (a read-only map of its file) with
// Badger's table code, under guard. The table is opened as Badger opens
// it, but as an in-memory table: one without a file of its own, so that
// closing it never unmaps or deletes anything; the caller owns data.
// Blocks are checksummed as they are read.
func openTable(data []byte, id uint64, c options.CompressionType) (*table.Table, error) {
	opts := &table.Options{
		BlockSize:   badger.DefaultOptions("").BlockSize,
		Compression: c,
		ChkMode:     options.OnBlockRead,
	}
	var t *table.Table
	err := guard(func() (err error) {
		t, err = table.OpenInMemoryTable(data, id, opts)
		return err
	})
	return t, err
}

// eachBlock reads every block of t, in order, checksums included, and
// calls fn (when not nil) with the index of each block and an iterator
// positioned at its first entry. It returns an error for the first block
// that does not read. Called from openTable's caller, under withMapped.
func eachBlock(t *table.Table, fn func(i int, it *table.Iterator, next []byte) error) error {
	return guard(func() error {
		// KeySplits with a huge n returns the first key of every block.
		bases := t.KeySplits(math.MaxInt32, nil)
		it := t.NewIterator(table.NOCACHE)
		defer it.Close()
		for i, base := range bases {
			key := []byte(base)
			it.Seek(key)
			if !it.Valid() || !bytes.Equal(it.Key(), key) {
				return fmt.Errorf("block %d of %d", i+1, len(bases))
			}
			if fn != nil {
				var next []byte
				if i+1 < len(bases) {
					next = []byte(bases[i+1])
				}
				if err := fn(i, it, next); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// checkLog walks every entry of a .mem or .vlog file.
func checkLog(path string) *CorruptError {
	var problem error
	err := withMapped(path, func(f *os.File, data []byte) error {
		switch {
		case len(data) == 0:
			return nil // created and not yet sized when a crash came: Badger starts it afresh
		case len(data) < logHeaderSize:
			problem = fmt.Errorf("%d bytes long, shorter than its %d-byte header", len(data), logHeaderSize)
		case binary.BigEndian.Uint64(data) != 0:
			problem = errors.New("its header names an encryption key, and otelrecords never encrypts")
		default:
			end := int(dataEnd(f, int64(len(data))))
			problem = guard(func() error { return walkLog(data, end, nil) })
		}
		return nil
	})
	switch {
	case err != nil:
		return damaged(path, "cannot be read", err)
	case problem != nil:
		return damaged(path, problem.Error(), nil)
	}
	return nil
}

// checkKeyRegistry checks Badger's KEYREGISTRY, which names the keys of
// an encrypted store. otelrecords never encrypts, so a healthy one is
// always what Badger writes for a store without encryption: a random IV
// (16 bytes) and the sanity text "Hello Badger", with no key after it. A
// damaged one could make Badger allocate up to 4 GiB for a key it
// believes follows.
func checkKeyRegistry(path string) *CorruptError {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // Badger writes a new one
	case err != nil:
		return damaged(path, "cannot be read", err)
	case len(b) != keyRegistrySize || string(b[16:]) != "Hello Badger":
		return damaged(path, fmt.Sprintf("is not the %d bytes Badger writes for a store without encryption", keyRegistrySize), nil)
	}
	return nil
}

// A logEntry is one entry of a Badger log (.mem or .vlog file): a header
// (meta and user-meta bytes, then key length, value length and expiry as
// uvarints), the key (with its 8-byte version), the value, and a CRC-32C
// (Castagnoli) of all that, big-endian.
type logEntry struct {
	meta  byte
	key   []byte
	value []byte
	size  int // bytes the entry takes in the log
}

var (
	errLogEnd   = errors.New("end of log")
	errLogShort = errors.New("entry runs past the end of the file")
	errLogBad   = errors.New("entry does not decode")
)

// decodeLogEntry decodes the entry at the start of b, as Badger's log
// reader does. It returns errLogEnd where Badger sees the end of the log (a
// zero key length: Badger zeroes the header after every write), errLogShort
// for an entry that runs past the end of b, and errLogBad for one whose
// lengths are out of range or whose checksum does not match.
func decodeLogEntry(b []byte) (logEntry, error) {
	if len(b) < 2 {
		return logEntry{}, errLogShort
	}
	p := 2
	var lens [3]uint64 // key length, value length, expiry
	for i := range lens {
		v, n := binary.Uvarint(b[p:])
		switch {
		case n == 0:
			if i == 0 && allZero(b[p:]) {
				return logEntry{}, errLogEnd
			}
			return logEntry{}, errLogShort
		case n < 0:
			return logEntry{}, errLogBad
		}
		lens[i] = v
		p += n
		if i == 0 && v == 0 {
			return logEntry{}, errLogEnd
		}
	}
	klen, vlen := lens[0], lens[1]
	if klen > maxKeyLen || vlen > math.MaxUint32 {
		return logEntry{}, errLogBad
	}
	body := uint64(p) + klen + vlen
	if body+crc32.Size > uint64(len(b)) {
		return logEntry{}, errLogShort
	}
	e := logEntry{
		meta:  b[0],
		key:   b[p : uint64(p)+klen],
		value: b[uint64(p)+klen : body],
		size:  int(body) + crc32.Size,
	}
	if crc32.Checksum(b[:body], castagnoli) != binary.BigEndian.Uint32(b[body:]) {
		return e, errLogBad
	}
	return e, nil
}

// walkLog calls fn (when not nil) with every entry of a log, in order.
//
// Badger reads a log up to the first entry that does not decode, and
// drops the rest. That is right after a crash: the log ends at zeros, or
// at the one entry the process was killed while writing, a prefix of it
// written and the rest still zeros (Badger sizes a log, with zeros,
// before it writes to it). It is data loss when the entry was damaged
// after it was written. So walkLog calls the log damaged where what it
// finds is not what a crash leaves: an entry that runs past the end of the
// file (a file cut short); an entry whose lengths are out of range, or
// which fails its checksum though its last byte was written; or any
// intact entry after the one that does not decode.
//
// end is where the file's data ends (see dataEnd): past it are only zeros.
func walkLog(data []byte, end int, fn func(off int, e logEntry)) error {
	off := logHeaderSize
	for off < len(data) {
		e, err := decodeLogEntry(data[off:])
		switch {
		case err == nil:
			if fn != nil {
				fn(off, e)
			}
			off += e.size
			continue
		case errors.Is(err, errLogShort):
			return fmt.Errorf("the entry at byte %d runs past the end of the file (%d bytes): it was cut short", off, len(data))
		case errors.Is(err, errLogBad) && (e.size == 0 || data[off+e.size-1] != 0):
			// A torn write never reaches its last byte (the checksum's):
			// zeros follow the point where it stopped.
			return fmt.Errorf("the entry at byte %d does not decode: it was overwritten", off)
		}
		if next := resync(data[:end], off+1); next >= 0 {
			return fmt.Errorf("bytes from %d do not decode, yet intact entries follow from byte %d: Badger would drop them", off, next)
		}
		return nil
	}
	return nil
}

// resync returns the offset of the first intact entry at or after from,
// or -1 if there is none. It looks at every offset up to the last non-zero
// byte of data, so it costs in proportion to what follows the damage; it
// only runs where a log stops decoding. An entry may end with zeros
// beyond data's end (its checksum's last bytes, say), so entries are
// decoded from the whole of what data was cut from.
func resync(data []byte, from int) int {
	last := lastNonZero(data)
	whole := data[:cap(data)]
	for p := from; p <= last; p++ {
		if data[p]&^knownMetaBits != 0 {
			continue
		}
		e, err := decodeLogEntry(whole[p:])
		// A key holds at least one byte and Badger's 8-byte version.
		if err == nil && len(e.key) > 8 {
			return p
		}
	}
	return -1
}

// lastNonZero returns the index of the last non-zero byte of b, or -1.
func lastNonZero(b []byte) int {
	i := len(b)
	for i >= 8 && binary.NativeEndian.Uint64(b[i-8:i]) == 0 {
		i -= 8
	}
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return i - 1
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// withMapped maps the file at path read-only and calls fn, under guard,
// with the open file and its bytes. The map is released when fn returns,
// so fn must not keep them.
func withMapped(path string, fn func(f *os.File, data []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return fn(f, nil)
	}
	if fi.Size() > math.MaxInt32*2 {
		return fmt.Errorf("%d bytes, larger than any file Badger writes", fi.Size())
	}
	data, err := z.Mmap(f, false, fi.Size())
	if err != nil {
		return err
	}
	defer func() { _ = z.Munmap(data) }()
	return guard(func() error { return fn(f, data) })
}

// guard runs fn, turning a panic into an error, and a memory fault (a
// mapped file shrinking under us) into a panic first, so that reading a
// damaged file never ends the process.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if strings.Contains(msg, "Recovering from initIndex crash") {
				// Badger's table reader re-panics with a dump in place of
				// the cause: a footer or index pointing outside the file.
				err = errors.New("the table reader panicked: its footer or index points outside the file")
				return
			}
			err = fmt.Errorf("reading it panicked: %s", firstLine(msg))
		}
	}()
	return fn()
}

// firstLine cuts Badger's multi-line panic reports (a table's debug dump)
// to their first non-empty line.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "==") {
			return line
		}
	}
	return strings.TrimSpace(s)
}

// parseFileID returns the number in a Badger file name such as
// "000001.sst" or "00001.mem".
func parseFileID(name, ext string) (uint64, bool) {
	id, err := strconv.ParseUint(strings.TrimSuffix(name, ext), 10, 64)
	return id, err == nil && strings.HasSuffix(name, ext)
}
