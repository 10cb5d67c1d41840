// Package spool is where a writer sets records aside when the store stays
// busy past its deadline, and where the next opener finds them again
// (docs/FORMAT.md §7). A writer acknowledged these records to its caller
// (every span that ended before Shutdown), so losing them because another
// process held the store at the wrong moment is not an option; holding
// them in memory ends with the process.
//
// The spool is a directory of files beside the data, which Badger ignores.
// Each file is one CBOR array of [key, value] byte-string pairs, exactly
// the entries that would have been written, in write order, named so that
// files sort oldest first. A file is written under a temporary name,
// synced and renamed, so it is whole or absent. Merging writes every file
// into the store, oldest first, and removes it; an entry written twice is
// harmless (its key is its stamp), so a merge cut short by a crash is
// simply done again.
//
// A spool travels with its store, and a store can come from anywhere (a
// tarball, another user, a mounted artifact), so every file in it is
// untrusted: the spool is opened inside the store and never through a
// link, and only regular files of at most MaxFile bytes are read, each
// opened without blocking and checked on its descriptor (internal/ground/storefs). A file that
// cannot be merged — not a regular file, too large, not decoding, or
// holding entries the store refuses — is set aside as <name>.bad and
// reported once, and the newer files are merged all the same.
//
// Writing the spool is the shared writer's business (internal/write/sharedstore),
// merging it is every read-write open's (badgerstore.Open, and
// badgerstore.OpenWait for a reader), and a reader that cannot write
// reads it in memory (Read): the format lives here, between them.
package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
	"github.com/otelrecords/otelrecords/sessions"
)

// dirName is the spool's directory, inside the store's.
const dirName = "spool"

// MaxFile is the size of the largest spool file a reader takes: 64 MiB.
// Write never writes a larger one, but for an entry that alone is larger
// (no store holds it: Badger's largest value is 16 MiB); a larger file is
// set aside as .bad. It bounds what one file makes a reader allocate.
const MaxFile = 64 << 20

// badSuffix is appended to the name of a spool file that cannot be merged.
const badSuffix = ".bad"

// Dir returns the spool directory of the store in store.
func Dir(store string) string { return filepath.Join(store, dirName) }

// ErrRejected is matched by the error the write function given to Merge
// returns (through Reject) when the store refuses entries for what they
// are (an empty key, a value larger than it holds) rather than for its
// own state: such a file would fail at every merge, so it is set aside
// instead of retried.
var ErrRejected = errors.New("otelrecords: spool: the store refuses these entries")

// Reject returns err, the store's reason for refusing a spool file's
// entries, matching ErrRejected as well, with err's message alone.
func Reject(err error) error { return rejected{err} }

type rejected struct{ error }

func (r rejected) Is(target error) bool { return target == ErrRejected }
func (r rejected) Unwrap() error        { return r.error }

// entry is one spooled entry: a 2-element CBOR array [key, value].
type entry struct {
	_     struct{} `cbor:",toarray"`
	Key   []byte
	Value []byte
}

// decMode bounds what a spool file may make a reader allocate: a spool is
// as untrusted as the store beside it.
var decMode, _ = cbor.DecOptions{
	MaxNestedLevels:  4,
	MaxArrayElements: 1 << 24,
}.DecMode()

// Write sets entries aside in the spool of the store in store, for the
// next opener to merge. It creates the directories it needs (mode 0700:
// records carry what the host put in its spans), and writes nothing for no
// entries. Entries go into as many files as keep each within MaxFile, in
// order. A spool that is not a directory (a link, say) is refused, with
// an error naming it. On an error nothing is in the spool.
func Write(store string, entries []sessions.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	root, err := os.OpenRoot(store)
	if err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	defer root.Close()
	sp, err := storefs.OpenDir(root, dirName, true)
	if err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	defer sp.Close()
	var written []string
	for len(entries) > 0 {
		n := fileLen(entries)
		name, err := writeFile(sp, entries[:n])
		if err != nil {
			for _, w := range written {
				_ = sp.Remove(w)
			}
			return fmt.Errorf("otelrecords: spool: %w", err)
		}
		written = append(written, name)
		entries = entries[n:]
	}
	// The renames are what make the records safe: make them durable.
	if d, err := sp.Open("."); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// fileLen returns how many of entries, at least one, fit in a file of at
// most MaxFile bytes.
func fileLen(entries []sessions.Entry) int {
	// Each pair costs its bytes, a 1-byte array header and two byte-string
	// headers of at most 9 bytes; the file's array header at most 9 more.
	size := 9
	for i, e := range entries {
		size += 19 + len(e.Key) + len(e.Value)
		if size > MaxFile && i > 0 {
			return i
		}
	}
	return len(entries)
}

// writeFile writes entries into a new spool file in sp and returns its
// name. The file is written under a temporary name, starting with a dot,
// which merges skip, synced, and renamed.
func writeFile(sp *os.Root, entries []sessions.Entry) (string, error) {
	out := make([]entry, len(entries))
	for i, e := range entries {
		out[i] = entry{Key: e.Key, Value: e.Value}
	}
	b, err := cbor.Marshal(out)
	if err != nil {
		return "", err
	}
	now := stamp()
	name := fmt.Sprintf("%020d-%d.cbor", now, os.Getpid())
	// The stamp is unique in this process and the pid between processes;
	// O_EXCL follows no link a store might hold at the name.
	tmp := fmt.Sprintf(".tmp-%d-%d", now, os.Getpid())
	f, err := sp.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = sp.Remove(tmp)
		return "", err
	}
	if err := sp.Rename(tmp, name); err != nil {
		_ = sp.Remove(tmp)
		return "", err
	}
	return name, nil
}

// last is the newest stamp this process gave a spool file.
var last atomic.Int64

// stamp returns the time for a spool file's name, later than any this
// process gave before. The pid in the name tells processes apart, but two
// writers of one process spilling within one tick of a coarse clock would
// otherwise get one name, and the second rename would replace the first
// file: records lost, and acknowledged.
func stamp() int64 {
	for {
		prev := last.Load()
		now := max(time.Now().UnixNano(), prev+1)
		if last.CompareAndSwap(prev, now) {
			return now
		}
	}
}

// names lists the spool files in sp, oldest first: the names ending in
// .cbor and not starting with a dot (a file being written), whatever
// their type, so that a FIFO or a link named like a spool file is found
// and refused rather than skipped in silence.
func names(sp *os.Root) ([]string, error) {
	d, err := sp.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	all, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range all {
		if strings.HasSuffix(n, ".cbor") && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// badFile is a spool file that can never be merged: why says why, for
// people.
type badFile struct {
	path string
	why  string
	err  error
}

func (e *badFile) Error() string {
	if e.err != nil {
		return fmt.Sprintf("otelrecords: spool file %s %s: %v", e.path, e.why, e.err)
	}
	return fmt.Sprintf("otelrecords: spool file %s %s", e.path, e.why)
}

func (e *badFile) Unwrap() error { return e.err }

// readFile reads and decodes the spool file name in sp: only a regular
// file of at most MaxFile bytes, opened without following a link or
// blocking (internal/ground/storefs). A file that can never be merged gives a
// *badFile; one that is gone, fs.ErrNotExist (another opener merged it).
func readFile(sp *os.Root, name string) ([]sessions.Entry, error) {
	path := filepath.Join(sp.Name(), name)
	b, err := storefs.ReadFile(sp, name, MaxFile)
	if refused := (*storefs.RefusedError)(nil); errors.As(err, &refused) {
		return nil, &badFile{path: path, why: refused.Problem}
	}
	if err != nil {
		return nil, err
	}
	var in []entry
	if err := decMode.Unmarshal(b, &in); err != nil {
		return nil, &badFile{path: path, why: "does not decode", err: err}
	}
	entries := make([]sessions.Entry, len(in))
	for i, e := range in {
		entries[i] = sessions.Entry{Key: e.Key, Value: e.Value}
	}
	return entries, nil
}

// list opens the spool of the store in store and lists its files, oldest
// first; done closes what it opened. No spool (or no store) is no files,
// and a spool that is not a directory an error.
func list(store string) (sp *os.Root, ns []string, done func(), err error) {
	root, err := os.OpenRoot(store)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, func() {}, nil
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("otelrecords: spool: %w", err)
	}
	sp, err = storefs.OpenDir(root, dirName, false)
	if sp == nil {
		root.Close()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("otelrecords: spool: %w", err)
		}
		return nil, nil, func() {}, nil
	}
	done = func() {
		sp.Close()
		root.Close()
	}
	if ns, err = names(sp); err != nil {
		done()
		return nil, nil, nil, fmt.Errorf("otelrecords: spool %s: %w", sp.Name(), err)
	}
	return sp, ns, done, nil
}

// orIgnore returns handle, or a handler that ignores what it is given.
func orIgnore(handle func(error)) func(error) {
	if handle == nil {
		return func(error) {}
	}
	return handle
}

// Has reports whether the store in store has a spool to see to: files
// waiting to be merged, or a spool that is not a directory, which an
// opener refuses.
func Has(store string) bool {
	_, ns, done, err := list(store)
	if err != nil {
		return errors.Is(err, storefs.ErrRefused)
	}
	done()
	return len(ns) > 0
}

// Merge writes every spool file of the store in store through write,
// oldest first, removing each once written, and returns how many entries
// it wrote. A file that can never be merged — not a regular file, larger
// than MaxFile, not decoding, or refused by write with an error matching
// ErrRejected (see Reject) — is renamed <name>.bad, kept for a person,
// and reported to handle (when not nil), once: it is never retried, and
// the newer files are merged all the same. Merge stops at any other error
// of write (a busy or full store), leaving that file and the later ones
// for the next opener. A spool that is not a directory is refused, with
// an error.
func Merge(store string, write func([]sessions.Entry) error, handle func(error)) (int, error) {
	handle = orIgnore(handle)
	n := 0
	err := each(store, func(sp *os.Root, name string, entries []sessions.Entry) error {
		if err := write(entries); errors.Is(err, ErrRejected) {
			handle(setAside(sp, name, &badFile{path: filepath.Join(sp.Name(), name), why: "cannot be written to the store", err: err}))
			return nil
		} else if err != nil {
			return fmt.Errorf("otelrecords: merge spool %s: %w", filepath.Join(sp.Name(), name), err)
		}
		if err := sp.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("otelrecords: merge spool: %w", err)
		}
		n += len(entries)
		return nil
	}, func(sp *os.Root, name string, bad *badFile) { handle(setAside(sp, name, bad)) })
	return n, err
}

// each calls fn with the entries of every spool file of the store in
// store, oldest first, and bad with every file that can never be merged,
// and stops at the first error of fn or of reading. A file gone meanwhile
// (another opener merged it) is skipped.
func each(store string, fn func(sp *os.Root, name string, entries []sessions.Entry) error, bad func(sp *os.Root, name string, bad *badFile)) error {
	sp, ns, done, err := list(store)
	if err != nil {
		return err
	}
	defer done()
	for _, name := range ns {
		entries, err := readFile(sp, name)
		if b := (*badFile)(nil); errors.As(err, &b) {
			bad(sp, name, b)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("otelrecords: spool: %w", err)
		}
		if err := fn(sp, name, entries); err != nil {
			return err
		}
	}
	return nil
}

// setAside renames the spool file name in sp to <name>.bad, which no merge
// reads, and returns the report of bad saying so. The rename acts on the
// name itself, never on what a link there points to.
func setAside(sp *os.Root, name string, bad *badFile) error {
	if err := sp.Rename(name, name+badSuffix); err != nil {
		return fmt.Errorf("%w (and it could not be set aside: %w)", bad, err)
	}
	return fmt.Errorf("%w; set aside as %s%s", bad, name, badSuffix)
}

// A File is one spool file as Read found it.
type File struct {
	// Name is the file's name in the spool.
	Name string
	// Entries are its entries, in write order.
	Entries []sessions.Entry
}

// Read reads every spool file of the store in store, oldest first,
// without changing anything: for a reader that cannot write the store,
// which shows the spooled records and leaves them for a writer to merge.
// It keeps at most limit bytes of entries in all (and reads at most
// MaxFile more), and fails, saying so, when the spool holds more. A file that can never be merged (see Merge) is
// reported to handle (when not nil) and skipped. A spool that is not a
// directory is refused, with an error.
func Read(store string, limit int64, handle func(error)) ([]File, error) {
	handle = orIgnore(handle)
	var files []File
	var total int64
	err := each(store, func(sp *os.Root, name string, entries []sessions.Entry) error {
		for _, e := range entries {
			total += int64(len(e.Key) + len(e.Value))
		}
		if total > limit {
			return fmt.Errorf("otelrecords: read spool %s: it holds more than the %d MiB a reader keeps in memory; a writer merges it", sp.Name(), limit>>20)
		}
		files = append(files, File{Name: name, Entries: entries})
		return nil
	}, func(_ *os.Root, _ string, bad *badFile) { handle(bad) })
	if err != nil {
		return nil, err
	}
	return files, nil
}

// Copy copies every spool file of the store in from into the spool of the
// store in to, oldest first, changing nothing in from, and returns how
// many files it copied: for the doctor, which gives the spool of a store
// it leaves untouched to the store it builds. A file that can never be
// merged (see Merge) stays behind and is reported to handle (when not
// nil). Each copy is written as Write writes a file, whole or absent.
func Copy(from, to string, handle func(error)) (int, error) {
	handle = orIgnore(handle)
	n := 0
	err := each(from, func(_ *os.Root, _ string, entries []sessions.Entry) error {
		if err := Write(to, entries); err != nil {
			return err
		}
		n++
		return nil
	}, func(_ *os.Root, _ string, bad *badFile) { handle(bad) })
	return n, err
}
