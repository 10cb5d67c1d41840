package badgerfmt

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"

	"github.com/dgraph-io/badger/v4/options"
)

// The cache of tables found sound, one file for each store, in
// <user cache dir>/otelrecords/sound: a header, the store's absolute
// path, then one fixed-size entry per table or sealed value log
// (soundEntry; a log's compression byte is sealedLog). It is a cache:
// a file that is missing, torn, of another version or of another store
// is as none (every table is read), and failing to write one costs only
// that reading. OTELRECORDS_CACHE_DIR, when set, is used instead of the
// user cache directory (tests point it at a directory of their own).

const (
	soundMagic = "otelrecords sound tables v1\n"
	// soundEntry is dev, ino, size, mtime, ctime, id, then compression in
	// a byte: big-endian.
	soundEntry = 6*8 + 1
	// maxSoundFiles bounds the cache: past it, writing one removes the
	// oldest others.
	maxSoundFiles = 256
)

// soundCacheDir returns the directory of the cache, and false when the
// system has none.
func soundCacheDir() (string, bool) {
	if d := os.Getenv("OTELRECORDS_CACHE_DIR"); d != "" {
		return filepath.Join(d, "sound"), true
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", false
	}
	return filepath.Join(d, "otelrecords", "sound"), true
}

// soundCacheFile returns the cache file of the store in dir, and the
// store's absolute path, which names it and heads it.
func soundCacheFile(dir string) (path, abs string, ok bool) {
	cache, ok := soundCacheDir()
	if !ok {
		return "", "", false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", false
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(cache, hex.EncodeToString(sum[:16])), abs, true
}

// loadSound returns the tables the cache says were found sound in the
// store in dir; nil when it says nothing that can be trusted.
func loadSound(dir string) map[soundKey]bool {
	path, abs, ok := soundCacheFile(dir)
	if !ok {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	head := soundHeader(abs)
	rest, ok := bytes.CutPrefix(raw, head)
	if !ok || len(rest)%soundEntry != 0 {
		return nil
	}
	tables := make(map[soundKey]bool, len(rest)/soundEntry)
	for ; len(rest) > 0; rest = rest[soundEntry:] {
		u := func(i int) uint64 { return binary.BigEndian.Uint64(rest[8*i:]) }
		k := soundKey{
			ident:       fileIdent{dev: u(0), ino: u(1), size: int64(u(2)), mtime: int64(u(3)), ctime: int64(u(4))},
			id:          u(5),
			compression: options.CompressionType(rest[48]),
		}
		if !k.ident.known() {
			return nil
		}
		tables[k] = true
	}
	return tables
}

// saveSound writes tables to the cache as the store in dir's, whole or
// not at all (a temporary file renamed over the old), and keeps the
// cache within maxSoundFiles. Failures are ignored: the next process
// reads the tables again.
func saveSound(dir string, tables map[soundKey]bool) {
	path, abs, ok := soundCacheFile(dir)
	if !ok {
		return
	}
	buf := soundHeader(abs)
	keys := make([]soundKey, 0, len(tables))
	for k := range tables {
		if k.ident.known() {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b soundKey) int { return cmp.Compare(a.id, b.id) })
	for _, k := range keys {
		for _, v := range []uint64{k.ident.dev, k.ident.ino, uint64(k.ident.size), uint64(k.ident.mtime), uint64(k.ident.ctime), k.id} {
			buf = binary.BigEndian.AppendUint64(buf, v)
		}
		buf = append(buf, byte(k.compression))
	}
	cache := filepath.Dir(path)
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return
	}
	_, statErr := os.Stat(path)
	tmp, err := os.CreateTemp(cache, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(buf)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
		return
	}
	if statErr != nil { // a new file: the cache may have grown past its bound
		pruneSoundCache(cache)
	}
}

// soundHeader is the start of the cache file of the store at abs.
func soundHeader(abs string) []byte {
	b := append([]byte(soundMagic), abs...)
	return append(b, 0)
}

// pruneSoundCache removes the files of the cache written longest ago
// while it holds more than maxSoundFiles.
func pruneSoundCache(cache string) {
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) <= maxSoundFiles {
		return
	}
	type file struct {
		name string
		mod  int64
	}
	files := make([]file, 0, len(entries))
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			files = append(files, file{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.mod, b.mod) })
	for _, f := range files[:max(len(files)-maxSoundFiles, 0)] {
		os.Remove(filepath.Join(cache, f.name))
	}
}
