package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/otelrecords/otelrecords/sessions"
)

// The spool holds entries a writer acknowledged but could not write because
// another process held the store past the writer's shutdown deadline. Each
// spool file is one CBOR array of [key, value] byte-string pairs, in write
// order, under <dir>/spool/. It is written to a temporary name, synced, and
// renamed, so a spool file is either whole or absent. The next process
// that opens the store for writing (or a reader, through OpenWait) writes
// the entries into the store and removes the file; writing an entry twice
// is harmless, since its key is its stamp, so a merge cut short by a crash
// is simply done again.
const spoolDirName = "spool"

type spoolEntry struct {
	_     struct{} `cbor:",toarray"`
	Key   []byte
	Value []byte
}

// spoolDecMode bounds what a spool file may make a reader allocate: a
// spool is as untrusted as the store beside it.
var spoolDecMode, _ = cbor.DecOptions{
	MaxNestedLevels:  4,
	MaxArrayElements: 1 << 24,
}.DecMode()

// SpoolDir returns the directory the spool of the store in dir lives in.
func SpoolDir(dir string) string { return filepath.Join(dir, spoolDirName) }

// WriteSpool sets entries aside in the spool of the store in dir, for the
// next opener to merge. It creates the store directory (mode 0700) if
// needed, and writes nothing for an empty slice.
func WriteSpool(dir string, entries []sessions.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	sdir := SpoolDir(dir)
	if err := makeDir(dir); err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	if err := makeDir(sdir); err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	out := make([]spoolEntry, len(entries))
	for i, e := range entries {
		out[i] = spoolEntry{Key: e.Key, Value: e.Value}
	}
	b, err := cbor.Marshal(out)
	if err != nil {
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	name := fmt.Sprintf("%020d-%d.cbor", time.Now().UnixNano(), os.Getpid())
	tmp, err := os.CreateTemp(sdir, ".tmp-*")
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
	if err := os.Rename(tmp.Name(), filepath.Join(sdir, name)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("otelrecords: spool: %w", err)
	}
	return nil
}

// spoolFiles lists the spool files of dir, oldest first.
func spoolFiles(dir string) []string {
	des, err := os.ReadDir(SpoolDir(dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range des {
		if n := de.Name(); !de.IsDir() && strings.HasSuffix(n, ".cbor") && !strings.HasPrefix(n, ".") {
			out = append(out, filepath.Join(SpoolDir(dir), n))
		}
	}
	slices.Sort(out)
	return out
}

// HasSpool reports whether the store in dir has spooled entries waiting to
// be merged.
func HasSpool(dir string) bool { return len(spoolFiles(dir)) > 0 }

// mergeSpool writes every spool file of s's directory into s, oldest
// first, removing each once written. A file that does not decode is
// renamed *.bad and reported: it is kept for a person, never retried.
func mergeSpool(s *Store, handle func(error)) (int, error) {
	n := 0
	for _, f := range spoolFiles(s.dir) {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another opener merged it
		}
		if err != nil {
			return n, fmt.Errorf("otelrecords: merge spool: %w", err)
		}
		var in []spoolEntry
		if err := spoolDecMode.Unmarshal(b, &in); err != nil {
			os.Rename(f, f+".bad")
			handle(fmt.Errorf("otelrecords: spool file %s does not decode, set aside as .bad: %w", f, err))
			continue
		}
		entries := make([]sessions.Entry, len(in))
		for i, e := range in {
			entries[i] = sessions.Entry{Key: e.Key, Value: e.Value}
		}
		if err := s.Write(entries); err != nil {
			return n, fmt.Errorf("otelrecords: merge spool %s: %w", f, err)
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("otelrecords: merge spool: %w", err)
		}
		n += len(entries)
	}
	return n, nil
}
