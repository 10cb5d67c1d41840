package badgerfmt

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// Badger's file names: the MANIFEST and KEYREGISTRY are named by Badger's
// own constants, its numbered files by these extensions.
const (
	// MemFileExt ends the name of a write-ahead log, one per memtable
	// (00001.mem). Such a log outlives its memtable only after a crash,
	// and the newest is the one Badger writes to.
	MemFileExt = ".mem"
	// ValueLogFileExt ends the name of a value-log file (000001.vlog),
	// which holds the values too large to sit beside their keys.
	ValueLogFileExt = ".vlog"
	// TableFileExt ends the name of a table (000001.sst), one sorted run
	// of keys of one level of Badger's LSM tree.
	TableFileExt = ".sst"
)

// ParseFileID returns the number in the name of one of Badger's numbered
// files, such as "000001.sst" or "00001.mem", when the name ends with ext:
// Badger numbers its files in the order it creates them, so the highest
// number is the newest file.
func ParseFileID(name, ext string) (uint64, bool) {
	id, err := strconv.ParseUint(strings.TrimSuffix(name, ext), 10, 64)
	return id, err == nil && strings.HasSuffix(name, ext)
}

// A Damage is what is wrong with one file of a store, as a reader of the
// file found it. Package badgerstore reports it as its CorruptError.
type Damage struct {
	// File is the path of the damaged file.
	File string
	// Problem says what is wrong with it, for people.
	Problem string
	// Err is the error that revealed the damage (Badger's, or the file
	// system's), or nil.
	Err error
}

func damaged(file, problem string, err error) *Damage {
	return &Damage{File: file, Problem: problem, Err: err}
}

// CheckForOpen reads the files of the store in dir that Badger's Open
// reads, as Badger reads them — the MANIFEST, the KEYREGISTRY, the index
// and last block of every table the MANIFEST lists, and every entry of
// every log — and returns the damage it finds, ordered by file name. It
// costs at most what Badger's Open costs again, so a store can be checked
// before every open: Badger panics on some damaged files in goroutines no
// recover reaches, and loses data over others without a word. A table
// or a sealed value log (any but the newest) found sound at an earlier
// check of dir, and whose file is unchanged since (same inode, size and
// times), is not read again: Badger never changes a table it has written,
// nor writes to a value log but the newest (sound.go). Nor is a MANIFEST
// so found with every table it lists (soundManifest).
//
// The caller holds the store's lock: the files of a live writer change
// under a reader, and would be taken for damaged. A directory that cannot
// be listed gives an error.
//
// When the program links a Badger other than [BadgerVersion], damage is
// still reported, and its Problem says that the reader may have misread it
// (see [CheckVersion]): a check that refused to run would leave the
// process to Badger's panics.
func CheckForOpen(dir string) ([]*Damage, error) {
	d, entries, err := listDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return CheckForOpenIn(d, entries)
}

// An OpenMode says how Badger opens the store after a check: what the
// check remembers of it depends on what that open changes (sound.go).
type OpenMode int

const (
	// ForRead is a read-only open, which changes nothing.
	ForRead OpenMode = iota
	// ForWrite is a read-write open: Badger truncates the MANIFEST to
	// its end (new times, so the MANIFEST the check found is not the
	// one the next check finds) and deletes the sealed value logs that
	// hold only a header. The check remembers neither, so a writer's
	// open of a store that nothing else changed leaves the cache file
	// as it was (BENCHMARKS.md, figure 9).
	ForWrite
)

// CheckForOpenIn is CheckForOpen on the store directory d, which its
// caller has open (the descriptor it holds the store's lock by) and has
// listed: entries are what d.ReadDir gave. An open lists its store's
// directory once, for this check and its others, and the tables are
// stat-ed relative to d rather than by path (BENCHMARKS.md, figure 9:
// a process's first open stats every table).
func CheckForOpenIn(d *os.File, entries []fs.DirEntry) ([]*Damage, error) {
	return CheckForOpenModeIn(d, entries, ForRead)
}

// CheckForOpenModeIn is CheckForOpenIn before an open in mode: a check
// before a read-write open does not remember the files that open changes
// or deletes.
func CheckForOpenModeIn(d *os.File, entries []fs.DirEntry, mode OpenMode) ([]*Damage, error) {
	found := check(d, entries, false, mode)
	if len(found) > 0 {
		if m := versionMismatch(); m != "" {
			for _, d := range found {
				d.Problem += " (" + m + ", so this may be a misreading)"
			}
		}
	}
	return found, nil
}

// CheckAll reads every file of the store in dir that CheckForOpen reads,
// and every block of every table as well, checksums included, and returns
// the damage it finds, ordered by file name. It is what `records doctor`
// relies on: nothing it reads can crash the process, whatever the bytes.
//
// The caller holds the store's lock. It refuses to read anything, with the
// error of [CheckVersion], when the program links a Badger other than
// [BadgerVersion], rather than report damage it may have misread.
func CheckAll(dir string) ([]*Damage, error) {
	if err := CheckVersion(); err != nil {
		return nil, err
	}
	d, entries, err := listDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return check(d, entries, true, ForRead), nil
}

// listDir opens dir and lists it.
func listDir(dir string) (*os.File, []fs.DirEntry, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, entries, nil
}

// A logJob is a log to read: a .mem file, or a .vlog file. A sealed one
// (a .vlog file not the newest: Badger writes only to the newest, and
// deletes the others whole) is read once and then known by its identity,
// as a table is (sound.go).
type logJob struct {
	path   string
	id     uint64
	sealed bool
}

// A checked is what one job of a check found: the damage, or else the
// identity of a sealed log found sound.
type checked struct {
	bad   *Damage
	sound soundKey
}

// check checks the store directory d, listed in entries, reading every
// block of every table when full is set, before an open in mode.
func check(d *os.File, entries []fs.DirEntry, full bool, mode OpenMode) []*Damage {
	dir := d.Name()
	var (
		found        []*Damage
		logs         []logJob
		newestLog    uint64
		hasManifest  bool
		hasDataFiles bool
	)
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == badger.ManifestFilename:
			hasManifest = true
		case strings.HasSuffix(name, TableFileExt):
			hasDataFiles = true
		case strings.HasSuffix(name, MemFileExt):
			hasDataFiles = true
			logs = append(logs, logJob{path: filepath.Join(dir, name)})
		case strings.HasSuffix(name, ValueLogFileExt):
			hasDataFiles = true
			id, ok := ParseFileID(name, ValueLogFileExt)
			logs = append(logs, logJob{path: filepath.Join(dir, name), id: id, sealed: ok})
			newestLog = max(newestLog, id)
		}
	}
	for i := range logs {
		logs[i].sealed = logs[i].sealed && logs[i].id < newestLog
	}
	manifestPath := filepath.Join(dir, badger.ManifestFilename)
	if bad := checkKeyRegistry(filepath.Join(dir, badger.KeyRegistryFileName)); bad != nil {
		found = append(found, bad)
	}
	// Tables, sealed logs and the MANIFEST found sound by an earlier
	// check of the store, and unchanged since, are not read again
	// (sound.go).
	var known map[soundKey]bool
	if !full {
		known = soundTables(dir)
	}
	var (
		tables   []tableJob
		manifest soundKey // the MANIFEST replayed or known, when sound
	)
	if !hasManifest {
		if hasDataFiles {
			// Badger would start an empty store here, and delete every
			// table it finds as unlisted.
			found = append(found, damaged(manifestPath, "missing, though the directory holds tables or logs", nil))
		}
	} else if ts, key, more, ok := knownTables(d, known, found); ok {
		tables, manifest, found = ts, key, more
	} else if m, ident, bad := checkManifest(manifestPath); bad != nil {
		found = append(found, bad)
	} else {
		manifest = soundKey{ident: ident, compression: soundManifest}
		tables, found = listTables(d, m, found)
	}

	toRead := tables
	if len(known) > 0 {
		toRead = make([]tableJob, 0, len(tables))
		for _, t := range tables {
			if !known[t.key()] {
				toRead = append(toRead, t)
			}
		}
	}
	var stillSound []soundKey // sealed logs known sound and unchanged
	if !full {
		logsToRead := logs[:0:0]
		for _, l := range logs {
			if l.sealed {
				if _, ident, err := statAt(d, filepath.Base(l.path)); err == nil && known[l.key(ident)] {
					stillSound = append(stillSound, l.key(ident))
					continue
				}
			}
			logsToRead = append(logsToRead, l)
		}
		logs = logsToRead
	}

	// The tables are mapped side by side and unmapped at once at the end
	// (arena): one TLB flush, not one a table. Not for a full check, which
	// reads every block: it would keep the whole store mapped until the
	// end, and costs far more than its unmaps anyway.
	var a *arena
	if !full {
		var total int64
		for _, t := range toRead {
			total += t.size
		}
		a = newArena(total)
		defer a.release()
	}

	// Tables and logs are independent: read them in parallel, as Badger
	// does, bounded so a large store does not start a goroutine per file.
	// A process's first open of a store checked before mostly has one
	// file to read, its newest log: read in this goroutine.
	if len(toRead)+len(logs) <= 1 {
		for _, t := range toRead {
			stillSound, found = keep(checked{bad: checkTable(a, t, full)}, stillSound, found)
		}
		for _, l := range logs {
			stillSound, found = keep(checkLogJob(l), stillSound, found)
		}
		return finish(dir, full, mode, tables, stillSound, manifest, known, found)
	}
	jobs := make(chan func() checked)
	results := make(chan checked)
	workers := min(runtime.GOMAXPROCS(0), 4)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for job := range jobs {
				if c := job(); c != (checked{}) {
					results <- c
				}
			}
		})
	}
	go func() {
		for _, t := range toRead {
			jobs <- func() checked { return checked{bad: checkTable(a, t, full)} }
		}
		for _, l := range logs {
			jobs <- func() checked { return checkLogJob(l) }
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	for c := range results {
		stillSound, found = keep(c, stillSound, found)
	}
	return finish(dir, full, mode, tables, stillSound, manifest, known, found)
}

// keep adds what a job found to the sealed logs found sound, or to the
// damage found.
func keep(c checked, sound []soundKey, found []*Damage) ([]soundKey, []*Damage) {
	switch {
	case c.bad != nil:
		found = append(found, c.bad)
	case c != checked{}:
		sound = append(sound, c.sound)
	}
	return sound, found
}

// finish orders the damage a check found by file name and, unless the
// check was full, remembers what it found sound: the tables with no
// damage, the sealed logs, and the MANIFEST when nothing was damaged —
// but for a check ForWrite, neither the MANIFEST nor the sealed logs
// that hold only a header, which Badger's open changes and deletes.
func finish(dir string, full bool, mode OpenMode, tables []tableJob, sealed []soundKey, manifest soundKey, known map[soundKey]bool, found []*Damage) []*Damage {
	slices.SortStableFunc(found, func(a, b *Damage) int { return strings.Compare(a.File, b.File) })
	if !full {
		sound := soundOf(tables, found)
		for _, k := range sealed {
			if mode != ForWrite || k.ident.size > logHeaderSize {
				sound[k] = true
			}
		}
		if len(found) == 0 && manifest.ident.known() && mode != ForWrite {
			sound[manifest] = true // with every table it lists
		}
		rememberSound(dir, sound, known)
	}
	return found
}

// checkLogJob reads the log l, and when it is sealed and sound returns
// the identity of the file it read, to be remembered.
func checkLogJob(l logJob) checked {
	if !l.sealed {
		return checked{bad: checkLog(l.path, nil)}
	}
	var ident fileIdent
	if bad := checkLog(l.path, &ident); bad != nil || !ident.known() {
		return checked{bad: bad}
	}
	return checked{sound: l.key(ident)}
}

// key returns the soundKey of the sealed log l, its file found as ident.
func (l logJob) key(ident fileIdent) soundKey {
	return soundKey{ident: ident, id: l.id, compression: sealedLog}
}

// soundOf returns the identities of the tables in which nothing was found.
func soundOf(tables []tableJob, found []*Damage) map[soundKey]bool {
	bad := make(map[string]bool, len(found))
	for _, d := range found {
		bad[d.File] = true
	}
	ok := make(map[soundKey]bool, len(tables))
	for _, t := range tables {
		if t.ident.known() && (len(bad) == 0 || !bad[t.path()]) {
			ok[t.key()] = true
		}
	}
	return ok
}
