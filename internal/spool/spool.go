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
// Writing the spool is the shared writer's business (internal/sharedstore),
// merging it is every read-write open's (badgerstore.Open, and
// badgerstore.OpenWait for a reader): the format lives here, between them.
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

	"github.com/otelrecords/otelrecords/sessions"
)

// dirName is the spool's directory, inside the store's.
const dirName = "spool"

// Dir returns the spool directory of the store in store.
func Dir(store string) string { return filepath.Join(store, dirName) }

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
// entries. On an error nothing is in the spool.
func Write(store string, entries []sessions.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	dir := Dir(store)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	out := make([]entry, len(entries))
	for i, e := range entries {
		out[i] = entry{Key: e.Key, Value: e.Value}
	}
	b, err := cbor.Marshal(out)
	if err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	name := fmt.Sprintf("%020d-%d.cbor", stamp(), os.Getpid())
	// CreateTemp's mode is 0600; the name starts with a dot, which files
	// skips, so a merge never reads a file half written.
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	return nil
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

// files lists the spool files of the store in store, oldest first.
func files(store string) []string {
	des, err := os.ReadDir(Dir(store))
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range des {
		if n := de.Name(); !de.IsDir() && strings.HasSuffix(n, ".cbor") && !strings.HasPrefix(n, ".") {
			out = append(out, filepath.Join(Dir(store), n))
		}
	}
	slices.Sort(out)
	return out
}

// Has reports whether the store in store has spooled entries waiting to be
// merged.
func Has(store string) bool { return len(files(store)) > 0 }

// Merge writes every spool file of the store in store through write,
// oldest first, removing each once written, and returns how many entries
// it wrote. A file that does not decode is renamed *.bad and reported to
// handle: it is kept for a person, never retried. Merge stops at the first
// error of write, leaving that file and the later ones for the next
// opener.
func Merge(store string, write func([]sessions.Entry) error, handle func(error)) (int, error) {
	n := 0
	for _, f := range files(store) {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another opener merged it
		}
		if err != nil {
			return n, fmt.Errorf("otelrecords: merge spool: %w", err)
		}
		var in []entry
		if err := decMode.Unmarshal(b, &in); err != nil {
			os.Rename(f, f+".bad")
			handle(fmt.Errorf("otelrecords: spool file %s does not decode, set aside as .bad: %w", f, err))
			continue
		}
		entries := make([]sessions.Entry, len(in))
		for i, e := range in {
			entries[i] = sessions.Entry{Key: e.Key, Value: e.Value}
		}
		if err := write(entries); err != nil {
			return n, fmt.Errorf("otelrecords: merge spool %s: %w", f, err)
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("otelrecords: merge spool: %w", err)
		}
		n += len(entries)
	}
	return n, nil
}
