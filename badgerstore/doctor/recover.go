package doctor

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
	"github.com/otelrecords/otelrecords/internal/store/chunk"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
	"github.com/otelrecords/otelrecords/sessions"
)

// Recovery from a damaged store.
//
// Badger cannot open a store with a damaged file, and would lose more than
// the damage if it could (it truncates a log at the first bad entry). So
// the store is read without Badger's database code, by package badgerfmt
// (badgerfmt.Salvage), and what is left is written into a new store. What
// is the store's is the lock, the new store, the swap and the spool.
//
// The swap is crash-safe: the new store is built whole in a sibling
// directory, a journal beside the store names both (storedir.Journal),
// and two renames put the damaged store aside and the new one in its
// place. At every instant the store's directory holds the old store, or
// the new one, or is missing while the journal says where the records
// are; the next Recover finishes a run cut short.

// A Recovery says what Recover did.
type Recovery struct {
	// Dir is the store's directory, holding the new store.
	Dir string
	// Aside is where the damaged store was moved, untouched; "" when the
	// store was healthy and nothing was done.
	Aside string
	// Damage is what was found wrong, one entry per damaged file.
	Damage []*badgerstore.CorruptError
	// Kept counts what the new store holds, by kind ("sessions" for
	// session rows; keys otelrecords does not know count under "").
	// Tallies and Importer count the store's other entries.
	Kept map[string]int
	// Tallies counts the tallies the new store holds (docs/FORMAT.md
	// §3.6: what a kept session let go, a part per writer).
	Tallies int
	// Importer counts the entries of an Importer's bookkeeping the new
	// store holds (docs/FORMAT.md §12).
	Importer int
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
	// Resumed reports that this Recover finished a run that was cut
	// short, rather than checking the store: Damage, Lost and LostEntries
	// are then unknown (the first run said them), and Kept counts what the
	// new store holds.
	Resumed bool
}

// doctorStep is called after each step of Recover that changes the disk,
// with the step's name: a test sets it to stop the process there, as a
// kill would.
var doctorStep = func(step string) {}

// Recover moves the damaged store in dir aside, to
// dir.damaged-<UTC time>, puts a new store in its place, and copies into
// it every record and session row it can still read from the damaged one,
// which it never changes. A healthy store (Verify finds nothing) is left
// as it is, and the Recovery says so (Aside is ""). Recover holds the
// store's lock while it works, and fails with an error matching
// badgerstore.ErrLocked when another process has the store open, or another Recover is at work
// on it. Like Verify, it reads no file, moves nothing and says why when
// the program links a version of Badger other than the one the store's
// file readers were written for.
//
// The new store is built beside the store and swapped in with renames,
// after a journal (dir.doctor) records where both are, so a Recover cut
// short (killed, or the machine down) leaves at dir either the old store,
// or the new one, or nothing and the journal, which badgerstore.Open
// reports (badgerstore.ErrRecoveryInterrupted); the next Recover finishes the run. When dir
// is a symbolic link, the directory it points to is recovered, and the
// link left as it is.
func Recover(dir string) (*Recovery, error) {
	if err := badgerfmt.CheckVersion(); err != nil {
		return nil, err
	}
	path, err := storedir.Resolve(dir)
	if err != nil {
		return nil, err
	}
	if storedir.Interrupted(dir, path) != nil {
		j, err := storedir.OpenJournal(path)
		if err != nil {
			return nil, err
		}
		defer j.Close()
		if j.Aside != "" {
			return finishRecovery(dir, j)
		}
	}

	unlock, err := storedir.Lock(path, true)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("otelrecords: no store at %s: %w", dir, err)
		}
		return nil, err
	}
	defer unlock()
	if err := storedir.Check(path); err != nil {
		return nil, err
	}
	damage, err := badgerfmt.CheckAll(path)
	if err != nil {
		return nil, fmt.Errorf("otelrecords: check store %s: %w", dir, err)
	}
	rec := &Recovery{Dir: dir, Damage: corrupt(damage), Kept: map[string]int{}}
	if len(damage) == 0 {
		if err := storedir.Present(path); err != nil {
			return nil, err
		}
		return rec, nil
	}

	// The journal is written only once the new store is built, but taken
	// now: it is also the lock that keeps a second doctor from finishing
	// a run this one has not recorded yet.
	j, err := storedir.OpenJournal(path)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	if j.Aside != "" {
		return nil, fmt.Errorf("otelrecords: another records doctor recorded a run on %s meanwhile; run the doctor again", dir)
	}
	// Build the new store beside the old one. A directory left there by a
	// run killed before it wrote its journal is half built: start again.
	fresh := path + storedir.NewSuffix
	if err := os.RemoveAll(fresh); err != nil {
		return nil, fmt.Errorf("otelrecords: remove %s, left by a doctor run cut short: %w", fresh, err)
	}
	read, err := badgerfmt.Salvage(path, describeKey)
	if err != nil {
		return nil, err
	}
	rec.Lost, rec.LostEntries = read.Lost, read.LostEntries
	kept := make([]sessions.Entry, len(read.Entries))
	for i, e := range read.Entries {
		kept[i] = sessions.Entry{Key: e.Key, Value: e.Value}
	}
	if err := writeRecovered(fresh, kept, rec); err != nil {
		return nil, err
	}
	// A spool holds whole records that never reached Badger: the new
	// store gets a copy, which its next opener merges; the damaged store
	// keeps its own, untouched.
	n, err := spool.Copy(path, fresh, func(err error) { rec.Lost = append(rec.Lost, err.Error()+" (left in the damaged store)") })
	if err != nil {
		return nil, fmt.Errorf("otelrecords: carry the spool over to the new store: %w", err)
	}
	rec.Spool = n > 0
	if err := storedir.SyncDir(fresh); err != nil {
		return nil, err
	}
	doctorStep("built")

	// The swap, journaled.
	aside := freeName(path + ".damaged-" + time.Now().UTC().Format("20060102T150405Z"))
	if err := j.Record(filepath.Base(aside), filepath.Base(fresh)); err != nil {
		return nil, fmt.Errorf("otelrecords: write the doctor's journal (nothing was moved): %w", err)
	}
	doctorStep("journal")
	if err := swap(path, aside, fresh, j, rec); err != nil {
		return rec, err
	}
	// Paths in the report name the files where they now are.
	for _, d := range rec.Damage {
		d.File = filepath.Join(aside, filepath.Base(d.File))
	}
	return rec, nil
}

// freeName returns path, or path-2, path-3..., the first that does not
// exist.
func freeName(path string) string {
	name := path
	for i := 2; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		name = fmt.Sprintf("%s-%d", path, i)
	}
}

// swap moves the damaged store at path aside and the new store from fresh
// into its place, and ends the run j records. A step already done (by a
// run cut short) is skipped.
func swap(path, aside, fresh string, j *storedir.Journal, rec *Recovery) error {
	if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
		// The lock is on the directory itself, so it moves with it: no
		// one opens the damaged store while it moves.
		if err := os.Rename(path, aside); err != nil {
			return fmt.Errorf("otelrecords: move the damaged store aside (nothing was moved): %w", err)
		}
	}
	rec.Aside = aside
	doctorStep("aside")
	if err := os.Rename(fresh, path); err != nil {
		return fmt.Errorf("otelrecords: move the new store into place: %w; %s", err, j.Pointer())
	}
	doctorStep("swap")
	if err := j.Done(); err != nil {
		return fmt.Errorf("otelrecords: remove the doctor's journal (the new store is in place): %w", err)
	}
	return nil
}

// finishRecovery finishes the run that the journal j records, and says
// what the new store holds.
func finishRecovery(dir string, j *storedir.Journal) (*Recovery, error) {
	path := j.Store
	aside := filepath.Join(filepath.Dir(path), j.Aside)
	fresh := filepath.Join(filepath.Dir(path), j.Fresh)
	rec := &Recovery{Dir: dir, Aside: aside, Kept: map[string]int{}, Resumed: true}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	switch {
	case !exists(fresh) && exists(path):
		// Both renames were made; only the journal was left.
		if err := j.Done(); err != nil {
			return nil, err
		}
	case !exists(fresh):
		return nil, fmt.Errorf("otelrecords: a records doctor run on %s was cut short, and %s, the store it recovered, is gone; the damaged store is in %s", dir, fresh, aside)
	case exists(path) && !exists(aside):
		// Nothing was moved: path is the damaged store.
		unlock, err := storedir.Lock(path, true)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if err := swap(path, aside, fresh, j, rec); err != nil {
			return rec, err
		}
	default:
		if exists(path) {
			// Between the renames, something made a directory at path: a
			// writer spooling records while the store was busy, which
			// makes the directory it spools into. Its spool goes to the
			// new store; anything else is for a person.
			if err := adopt(path, fresh); err != nil {
				return rec, fmt.Errorf("%w; %s", err, j.Pointer())
			}
		}
		if err := swap(path, aside, fresh, j, rec); err != nil {
			return rec, err
		}
	}
	countKept(path, rec)
	return rec, nil
}

// adopt gives the new store in fresh the spool of the directory at path,
// made while there was no store there, and removes that directory. It
// refuses, changing nothing, when the directory holds anything but a
// spool and the waiting marker.
func adopt(path, fresh string) error {
	des, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, de := range des {
		if n := de.Name(); n != filepath.Base(spool.Dir(path)) && n != "otelrecords.waiting" {
			return fmt.Errorf("otelrecords: %s was made while its store was moved, and holds %s, which the doctor leaves to a person", path, n)
		}
	}
	if _, err := spool.Copy(path, fresh, nil); err != nil {
		return err
	}
	return os.RemoveAll(path)
}

// countKept counts, by kind, what the store at path holds, as far as it
// can be read now (a writer may hold it already).
func countKept(path string, rec *Recovery) {
	s, err := badgerstore.Open(path, badgerstore.WithReadOnly(), badgerstore.WithErrorHandler(nil))
	if err != nil {
		return
	}
	defer s.Close()
	for e, err := range s.Scan(nil, nil) {
		if err != nil {
			return
		}
		rec.count(e.Key, 1)
	}
}

// count adds n records (or one entry of another sort) under key to what
// the new store holds.
func (rec *Recovery) count(key []byte, n int) {
	switch {
	case keys.IsTally(key):
		rec.Tallies++
	case bytes.HasPrefix(key, []byte(keys.ImportRoot+"/")):
		rec.Importer++
	default:
		rec.Kept[kindOf(key)] += n
	}
}

// kindOf returns the kind a key is of: "sessions" for a session row, ""
// for a key otelrecords does not know.
func kindOf(key []byte) string {
	kind, _, _, err := keys.Parse(key)
	if err != nil {
		return ""
	}
	return kind
}

// writeRecovered creates the new store in dir and writes the entries into
// it. No one else knows the directory: it is not waited for.
func writeRecovered(dir string, kept []sessions.Entry, rec *Recovery) error {
	s, err := badgerstore.Open(dir, badgerstore.WithErrorHandler(nil))
	if err != nil {
		return fmt.Errorf("otelrecords: create the new store (nothing was moved): %w", err)
	}
	const batch = 4096
	for i := 0; i < len(kept); i += batch {
		if err := s.Write(kept[i:min(i+batch, len(kept))]); err != nil {
			_ = s.Close()
			return fmt.Errorf("otelrecords: write the new store (nothing was moved): %w", err)
		}
	}
	for _, e := range kept {
		key, n := recordsIn(e)
		rec.count(key, n)
	}
	return s.Close()
}

// recordsIn returns the key that says what an entry holds (a chunk's
// first record's), and how many records: those of a chunk that decodes,
// else one. A chunk that does not decode is an entry otelrecords does not
// know: nil.
func recordsIn(e sessions.Entry) (key []byte, n int) {
	first, lo, hi, ok := chunk.ParseKey(e.Key)
	if !ok {
		return e.Key, 1
	}
	recs, _, err := chunk.Decode(e.Value, lo, hi, nil, nil)
	if err != nil || len(recs) == 0 {
		return nil, 1
	}
	return first, len(recs)
}

// describeKey names a key for people: the record, records or session row
// it holds, or the key itself, quoted.
func describeKey(k []byte) string {
	if first, lo, hi, ok := chunk.ParseKey(k); ok {
		kind, session, _, _ := keys.Parse(first)
		return fmt.Sprintf("the %q records of session %d from seq %d to %d", kind, session, lo, hi)
	}
	if id, part, ok := keys.ParseTally(k); ok {
		return fmt.Sprintf("the tally of session %d (part %d)", id, part)
	}
	kind, session, seq, err := keys.Parse(k)
	switch {
	case err != nil:
		return fmt.Sprintf("key %q", k)
	case kind == keys.SessionsKind:
		return fmt.Sprintf("the session row of %d", session)
	}
	return fmt.Sprintf("a %q record (session %d, seq %d)", kind, session, seq)
}
