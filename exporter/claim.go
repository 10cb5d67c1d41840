package exporter

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
)

// ErrDirInUse is matched by the error New returns for a directory another
// Exporter of this process records into and has not shut down. Two
// exporters of one process on one store would take turns with each other
// as two processes do, each reporting the other as "another process";
// give each its own directory, or give one exporter to both providers.
var ErrDirInUse = errors.New("otelrecords: another exporter of this process records into this directory")

// claimed holds the directories this process's exporters record into,
// by absolute path.
var claimed struct {
	mu   sync.Mutex
	dirs map[string]bool
}

// claimDir claims dir for one exporter of this process, and returns the
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
