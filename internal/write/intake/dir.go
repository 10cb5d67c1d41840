package intake

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
)

// BusyWait is how long a write waits for a store another process holds
// before the store spools it, in an entry point's own rounds (the
// SpanProcessor's loop, the Importer's tick).
const BusyWait = 10 * time.Second

// Claim settles where the store for dir is, once, for one writer of this
// process (an Exporter, an Importer): dir, or the default store for ""
// (storeDir); placed by badgerstore.Place, so that a path no store can be
// written in (the user's files, a file, a socket, a read-only parent)
// fails New, not the session's first write; and claimed (claimDir). It
// returns the store's directory and the function that gives the claim
// back.
func Claim(dir string) (placed string, release func(), err error) {
	if dir, err = storeDir(dir); err != nil {
		return "", nil, err
	}
	if placed, err = badgerstore.Place(dir); err != nil {
		return "", nil, err
	}
	if release, err = claimDir(placed); err != nil {
		return "", nil, err
	}
	return placed, release, nil
}

// storeDir is the store directory for dir: dir itself, or the default
// store when it is "" ($OTELRECORDS_DIR, else badgerstore.DefaultDir()).
func storeDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, err := badgerstore.DefaultDir()
	if err != nil {
		return "", fmt.Errorf("otelrecords: no store directory given and no default: %w", err)
	}
	return d, nil
}

// ErrDirInUse is matched by the error Claim returns for a directory
// another writer of this process (an Exporter, an Importer) records into
// and has not shut down. Two writers of one process on one store would
// take turns with each other as two processes do, each reporting the
// other as "another process".
var ErrDirInUse = errors.New("otelrecords: another exporter of this process records into this directory")

// claimed holds the directories this process's writers record into, by
// absolute path: one table for both entry points.
var claimed struct {
	mu   sync.Mutex
	dirs map[string]bool
}

// claimDir claims dir for one writer of this process, and returns the
// function that gives it back; a directory claimed already is refused.
func claimDir(dir string) (release func(), err error) {
	key, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("otelrecords: store directory %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(key); err == nil {
		key = real
	}
	claimed.mu.Lock()
	defer claimed.mu.Unlock()
	if claimed.dirs[key] {
		return nil, fmt.Errorf("%w: %s (shut it down first, give each exporter its own directory, or add one exporter to both providers)", ErrDirInUse, dir)
	}
	if claimed.dirs == nil {
		claimed.dirs = map[string]bool{}
	}
	claimed.dirs[key] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			claimed.mu.Lock()
			defer claimed.mu.Unlock()
			delete(claimed.dirs, key)
		})
	}, nil
}
