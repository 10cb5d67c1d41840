package storedir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
)

// The doctor's journal.
//
// Recover builds the recovered store in a sibling directory, <dir>.doctor-new,
// and then swaps it in with two renames: the damaged store to
// <dir>.damaged-<time>, the recovered one to <dir>. Between the renames
// there is no store at <dir>, and a process killed there must not leave a
// directory that looks empty, or nothing that says where the records went.
// So before the first rename Recover writes a journal beside the store,
// <dir>.doctor, naming both directories, and removes it after the second.
// While it exists: Open refuses to create a store at <dir> or to call it
// missing, and says where the records are (ErrInterrupted); and
// the next Recover reads it and finishes the swap. The journal is also
// the doctors' lock (flock), so two never work on one store at once.
//
// A journal is read as untrusted as the store (internal/ground/storefs), and the
// directories it names must be siblings of the store named after it.

const (
	// journalSuffix names the journal beside the store: <dir>.doctor.
	journalSuffix = ".doctor"
	// NewSuffix names the directory the recovered store is built in.
	NewSuffix = ".doctor-new"
	// maxJournal bounds the journal: two names and a few lines for people.
	maxJournal = 64 << 10
	// journalTitle opens a journal.
	journalTitle = "otelrecords doctor journal, version 1\n"
)

// A Journal is the doctor's journal of one store, open and locked.
type Journal struct {
	parent *os.Root // the directory holding the store
	name   string   // the journal's name in it
	f      *os.File
	// Store is the store's path.
	Store string
	// Aside and Fresh are the names (in the store's parent) of the
	// damaged store and of the recovered one, when a run recorded them;
	// "" otherwise.
	Aside, Fresh string
}

// OpenJournal opens (creating it) and locks the journal of the store at
// path, and reads what a run cut short recorded there. It fails with an
// error matching ErrLocked when another doctor holds it.
func OpenJournal(path string) (*Journal, error) {
	parent, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	j := &Journal{parent: parent, name: filepath.Base(path) + journalSuffix, Store: path}
	j.f, err = storefs.Open(parent, j.name, os.O_RDWR|os.O_CREATE, 0o600, maxJournal)
	if err != nil {
		parent.Close()
		return nil, fmt.Errorf("otelrecords: the doctor's journal: %w", err)
	}
	if err := LockFile(j.f); err != nil {
		j.Close()
		return nil, fmt.Errorf("%w: another records doctor is at work on %s: %w", ErrLocked, path, err)
	}
	b, err := io.ReadAll(io.LimitReader(j.f, maxJournal))
	if err == nil {
		j.Aside, j.Fresh, err = parseJournal(b, filepath.Base(path))
	}
	if err != nil {
		j.Close()
		return nil, fmt.Errorf("otelrecords: the doctor's journal %s: %w", filepath.Join(filepath.Dir(path), j.name), err)
	}
	return j, nil
}

// parseJournal returns the names a journal records, "" for an empty
// journal (a run killed before it recorded anything). Each must be a
// sibling of the store named base, named after it.
func parseJournal(b []byte, base string) (aside, fresh string, err error) {
	if len(b) == 0 {
		return "", "", nil
	}
	if !bytes.HasPrefix(b, []byte(journalTitle)) {
		return "", "", errors.New("not a journal otelrecords writes")
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok && (k == "aside" || k == "new") {
			if v != filepath.Base(v) || !strings.HasPrefix(v, base+".") {
				return "", "", fmt.Errorf("names %q, which is not beside the store", v)
			}
			if k == "aside" {
				aside = v
			} else {
				fresh = v
			}
		}
	}
	if aside == "" || fresh == "" {
		return "", "", errors.New("names no stores")
	}
	return aside, fresh, nil
}

// Record writes into the journal the names of the damaged store, where it
// will be moved, and of the recovered one, and syncs it.
func (j *Journal) Record(aside, fresh string) error {
	dir := filepath.Dir(j.Store)
	text := journalTitle + fmt.Sprintf(`A records doctor run on %s was cut short while it replaced the
damaged store with the recovered one. Every record is in one of these
directories, beside it; run records doctor --dir %s to finish.
aside: %s
new: %s
`, j.Store, j.Store, aside, fresh)
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	if _, err := j.f.WriteAt([]byte(text), 0); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		return err
	}
	j.Aside, j.Fresh = aside, fresh
	return SyncDir(dir)
}

// Pointer says, for people, where the records of a run cut short are.
func (j *Journal) Pointer() string {
	dir := filepath.Dir(j.Store)
	return fmt.Sprintf("the records are in %s (the damaged store, as it was) and %s (what was recovered); run `records doctor --dir %s` to finish",
		filepath.Join(dir, j.Aside), filepath.Join(dir, j.Fresh), j.Store)
}

// Done removes the journal: the run it recorded is over.
func (j *Journal) Done() error {
	if err := j.parent.Remove(j.name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	j.Aside, j.Fresh = "", ""
	return SyncDir(filepath.Dir(j.Store))
}

// Close unlocks the journal, removing it if it records nothing.
func (j *Journal) Close() {
	if j.Aside == "" {
		_ = j.parent.Remove(j.name)
	}
	j.f.Close()
	j.parent.Close()
}

// Interrupted returns an error matching ErrInterrupted, saying
// where the records are, when a doctor run on the store at path (dir, as
// the caller gave it) was cut short; nil otherwise. A journal it cannot
// read is no journal: the check is a courtesy on the way to "no store".
func Interrupted(dir, path string) error {
	parent, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil
	}
	defer parent.Close()
	b, err := storefs.ReadFile(parent, filepath.Base(path)+journalSuffix, maxJournal)
	if err != nil {
		return nil
	}
	aside, fresh, err := parseJournal(b, filepath.Base(path))
	if err != nil || aside == "" {
		return nil
	}
	j := &Journal{Store: path, Aside: aside, Fresh: fresh}
	return fmt.Errorf("%w at %s: %s", ErrInterrupted, dir, j.Pointer())
}

// SyncDir makes the renames and removals in dir durable, as far as the
// system can: not every one syncs a directory, so a failure to is not an
// error, but a directory that cannot be opened is.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	_ = d.Sync()
	return d.Close()
}
