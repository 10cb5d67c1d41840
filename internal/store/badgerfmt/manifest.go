package badgerfmt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Facts of the MANIFEST and KEYREGISTRY the checks depend on.
const (
	// keyRegistrySize is the size of Badger's KEYREGISTRY for a store
	// without encryption.
	keyRegistrySize = 28
	// maxLevels is Badger's default number of LSM levels, which
	// badgerstore keeps.
	maxLevels = 7
)

// checkManifest replays the MANIFEST with Badger's own code, and also
// refuses one that ends inside an entry: Badger would cut that entry off
// and forget the tables it listed, then delete their files as unlisted.
// Badger appends each entry with one write and a sync, so a kill leaves
// none half-written.
//
// It returns the identity of the file it read, as it was before the read.
func checkManifest(path string) (badger.Manifest, fileIdent, *Damage) {
	f, err := os.Open(path)
	if err != nil {
		return badger.Manifest{}, fileIdent{}, damaged(path, "cannot be read", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return badger.Manifest{}, fileIdent{}, damaged(path, "cannot be read", err)
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
		return badger.Manifest{}, fileIdent{}, damaged(path, "does not replay", err)
	}
	if end != fi.Size() {
		return badger.Manifest{}, fileIdent{}, damaged(path, fmt.Sprintf("ends inside an entry (the last whole one ends at byte %d of %d): it was cut short or overwritten", end, fi.Size()), nil)
	}
	return m, identOf(fi), nil
}

// soundManifest is the compression of the soundKey (id 0) of a MANIFEST
// a check replayed and found sound with every table it lists, and
// everything else it read: none of Badger's compressions, nor sealedLog.
// Badger only appends to its MANIFEST, or writes a new one and renames it
// over the old, so the same file unchanged since lists the same tables —
// those the check remembered — and need not be replayed again (a fifth of
// a process's first check of the store of BENCHMARKS.md, figure 9).
const soundManifest options.CompressionType = 0xfe

// knownTables returns the tables of the store directory d when its
// MANIFEST is one known sound (soundManifest): the tables known sound
// beside it, which are every table it lists, stat-ed again (found gains
// those now missing). ok is false when the MANIFEST is not known, and
// must be replayed.
func knownTables(d *os.File, known map[soundKey]bool, found []*Damage) (jobs []tableJob, manifest soundKey, _ []*Damage, ok bool) {
	if len(known) == 0 {
		return nil, soundKey{}, found, false
	}
	_, ident, err := statAt(d, badger.ManifestFilename)
	manifest = soundKey{ident: ident, compression: soundManifest}
	if err != nil || !ident.known() || !known[manifest] {
		return nil, soundKey{}, found, false
	}
	listed := make([]soundKey, 0, len(known))
	for k := range known {
		if k.compression != sealedLog && k.compression != soundManifest {
			listed = append(listed, k)
		}
	}
	jobs = make([]tableJob, 0, len(listed)) // in no order: the damage found is sorted
	for _, k := range listed {
		if job, bad := statTable(d, k.id, k.compression); bad != nil {
			found = append(found, bad)
		} else {
			jobs = append(jobs, job)
		}
	}
	return jobs, manifest, found, true
}

// A tableJob is a table the MANIFEST lists, to be read.
type tableJob struct {
	dir, name   string // the store's directory, the table's file in it
	id          uint64
	compression options.CompressionType
	size        int64     // when listed
	ident       fileIdent // when listed
}

// listTables returns the tables the manifest lists, in id order, adding
// to found those that cannot be opened at all.
func listTables(d *os.File, m badger.Manifest, found []*Damage) ([]tableJob, []*Damage) {
	ids := make([]uint64, 0, len(m.Tables))
	for id := range m.Tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	jobs := make([]tableJob, 0, len(ids))
	for _, id := range ids {
		tm := m.Tables[id]
		job, bad := statTable(d, id, tm.Compression)
		switch {
		case bad != nil:
			found = append(found, bad)
		case tm.KeyID != 0:
			found = append(found, damaged(job.path(), "the MANIFEST says it is encrypted, and otelrecords never encrypts", nil))
		case int(tm.Level) >= maxLevels:
			// Badger indexes its levels by this number without a check.
			found = append(found, damaged(job.path(), fmt.Sprintf("the MANIFEST places it at level %d, beyond the last (%d)", tm.Level, maxLevels-1), nil))
		default:
			jobs = append(jobs, job)
		}
	}
	return jobs, found
}

// path returns the path of the table's file.
func (t tableJob) path() string { return filepath.Join(t.dir, t.name) }

// statTable stats the table id, listed with compression c, in the store
// directory d: the table to read, or what keeps it from being read.
func statTable(d *os.File, id uint64, c options.CompressionType) (tableJob, *Damage) {
	t := tableJob{dir: d.Name(), name: tableName(id), id: id, compression: c}
	size, ident, err := statAt(d, t.name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, damaged(t.path(), "listed in the MANIFEST but missing", nil)
	case err != nil:
		return t, damaged(t.path(), "cannot be read", err)
	}
	t.size, t.ident = size, ident
	return t, nil
}

// tableName is the name of table id's file, as Badger's table.IDToFilename
// gives it ("000001.sst"), without its fmt.Sprintf: a check names every
// table of a store.
func tableName(id uint64) string {
	s := strconv.FormatUint(id, 10)
	if len(s) < 6 {
		s = "000000"[len(s):] + s
	}
	return s + TableFileExt
}

// checkKeyRegistry checks Badger's KEYREGISTRY, which names the keys of
// an encrypted store. otelrecords never encrypts, so a healthy one is
// always what Badger writes for a store without encryption: a random IV
// (16 bytes) and the sanity text "Hello Badger", with no key after it. A
// damaged one could make Badger allocate up to 4 GiB for a key it
// believes follows.
func checkKeyRegistry(path string) *Damage {
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
