// Package badgerfmttest builds Badger stores and damages them on purpose,
// in the ways a disk, a file system or a careless hand damage them, for
// the tests of package badgerfmt, which finds the damage, and of packages
// badgerstore and badgerstore/doctor, which must survive it: all test
// against the same stores and the same damage, and where to write so
// that a table's index rather than its data is hit is written down once,
// beside the readers that know the format.
package badgerfmttest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt"
)

// A Damage is one way a file of a store gets damaged.
type Damage struct {
	// Name says what is done, for test names.
	Name string
	// Crash is set for a damage done to a store whose writer was killed:
	// only such a store has a write-ahead log (.mem) to damage.
	Crash bool
	// File is the end of the name of the file damaged: the one of FileWith.
	File string
	// Do damages the file at path.
	Do func(t testing.TB, path string)
}

// Damages are the damages a store must survive (issue 4): random bytes
// written into a table, the MANIFEST, a value log and a write-ahead log,
// and each of them truncated. Random bytes go into the part of a table
// that Badger's Open reads (its index); damage to its data blocks is
// DataBlock.
var Damages = []Damage{
	{"sst random bytes in the index", false, badgerfmt.TableFileExt, func(t testing.TB, path string) {
		start := tableIndexStart(t, path)
		Overwrite(t, path, start+(usedLen(t, path)-start)/2-32, 64)
	}},
	{"sst truncated", false, badgerfmt.TableFileExt, cutHalf},
	{"MANIFEST random bytes", false, badger.ManifestFilename, randomIn},
	{"MANIFEST truncated", false, badger.ManifestFilename, cutHalf},
	{"vlog random bytes", false, badgerfmt.ValueLogFileExt, randomIn},
	{"vlog truncated", false, badgerfmt.ValueLogFileExt, cutHalf},
	{"mem random bytes", true, badgerfmt.MemFileExt, randomIn},
	{"mem truncated", true, badgerfmt.MemFileExt, cutHalf},
}

// DataBlock writes random bytes into a data block of a table, a third of
// the way into its blocks: damage that Badger's Open does not read, and
// that only a reader of every block finds.
var DataBlock = Damage{"sst random bytes in a data block", false, badgerfmt.TableFileExt, func(t testing.TB, path string) {
	Overwrite(t, path, tableIndexStart(t, path)/3, 64)
}}

// randomIn writes 64 random bytes into the middle of a file's data.
func randomIn(t testing.TB, path string) {
	u := usedLen(t, path)
	n := min(64, u/2)
	Overwrite(t, path, u/2-n/2, n)
}

// cutHalf truncates a file to half its data.
func cutHalf(t testing.TB, path string) {
	if err := os.Truncate(path, int64(usedLen(t, path)/2)); err != nil {
		t.Fatal(err)
	}
}

// Overwrite writes n random bytes (from a seed fixed by off, so a test
// damages the same way every run) at byte off of the file at path.
func Overwrite(t testing.TB, path string, off, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, uint64(off)))
	junk := make([]byte, n)
	for i := range junk {
		junk[i] = byte(r.Uint32())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(junk, int64(off)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// tableIndexStart returns where a table's index begins: Badger's table
// ends with the index, its length (4 bytes), a checksum and the
// checksum's length (4 bytes).
func tableIndexStart(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := len(b) - 4
	p -= int(binary.BigEndian.Uint32(b[p:]))
	p -= 4
	return p - int(binary.BigEndian.Uint32(b[p:]))
}

// FileWith returns the path of the file in dir whose name ends with
// suffix, preferring the one with the most data (a store has an empty
// value log beside the one holding values).
func FileWith(t testing.TB, dir, suffix string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	best, bestUsed := "", -1
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if u := usedLen(t, path); u > bestUsed {
			best, bestUsed = path, u
		}
	}
	if best == "" {
		t.Fatalf("no *%s file in %s", suffix, dir)
	}
	return best
}

// usedLen returns the length of a file without its trailing zeros: a log
// is sized before it is written, so its written part is shorter.
func usedLen(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := len(b)
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return i
}

// FilesIn returns the regular files of dir, but for Badger's LOCK, each
// with its size and hash: what a test compares to show a reader changed
// nothing.
func FilesIn(t testing.TB, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
	}
	return out
}

// Build makes a store in dir the way writers make one, in spells: for
// each spell it calls spell with the directory to open and the spell's
// number (from 0), and spell opens a store there, writes, and returns the
// store's Close, which Build calls. With crash set, the last spell writes
// in dir+"-live", and dir becomes a copy of that store made while it is
// open (CopyDir): what a writer killed at that moment leaves.
func Build(t testing.TB, dir string, spells int, crash bool, spell func(dir string, i int) (close func() error)) {
	t.Helper()
	for i := range spells {
		live := dir
		last := i == spells-1
		if crash && last {
			live = dir + "-live"
			if err := os.Rename(dir, live); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		close := spell(live, i)
		if crash && last {
			CopyDir(t, live, dir)
		}
		if err := close(); err != nil {
			t.Fatal(err)
		}
	}
}

// CopyDir copies the regular files of src into a new directory dst,
// keeping runs of zeros as holes, as Badger's own files have them. Copied
// while a writer has the store open, it is what the writer leaves when it
// is killed at that moment: Badger's logs are memory maps, so the copy
// sees every acknowledged write.
func CopyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.Mkdir(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dst, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		const chunk = 64 << 10
		for off := 0; off < len(b); off += chunk {
			part := b[off:min(off+chunk, len(b))]
			if allZero(part) {
				continue
			}
			if _, err := f.WriteAt(part, int64(off)); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Truncate(int64(len(b))); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
