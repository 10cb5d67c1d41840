package badgerstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/internal/store/storedir"
)

// A reader that replays a crashed writer's log without writing the store
// (openReplayed) builds a directory of a few MiB in the temporary
// directory, and removes it when the Store closes. A reader killed before
// it closes cannot; so each reader holds a shared lock on its directory
// while it lives (Badger's own read-only lock on it is shared too), and
// every read-only open removes the replay directories no process holds:
// a killed reader leaves nothing that the next reader does not remove.

// replayPrefix begins the name of every replay directory.
const replayPrefix = "otelrecords-replay-"

// replayGrace is how old a replay directory must be before a reader
// judges it: a reader takes its lock a moment after making it.
const replayGrace = 2 * time.Second

// newReplayDir makes a replay directory in the temporary directory and
// takes its lock, which the returned release gives up, with the
// directory.
func newReplayDir() (tmp string, release func(), err error) {
	tmp, err = os.MkdirTemp("", replayPrefix+"*")
	if err != nil {
		return "", nil, err
	}
	unlock, err := storedir.Lock(tmp, false)
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return tmp, func() {
		_ = os.RemoveAll(tmp)
		unlock()
	}, nil
}

// removeStaleReplays removes the replay directories of the temporary
// directory that no live process holds, and reports to handle those it
// could not remove. It does nothing where directories cannot be locked
// (dirLocks): there a directory in use and a forgotten one look alike.
func removeStaleReplays(handle func(error)) {
	if !storedir.Locks {
		return
	}
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return // no temporary directory to look in: nothing was left there
	}
	for _, de := range entries {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), replayPrefix) {
			continue
		}
		dir := filepath.Join(tmp, de.Name())
		if fi, err := de.Info(); err != nil || time.Since(fi.ModTime()) < replayGrace {
			continue
		}
		unlock, err := storedir.Lock(dir, true)
		if err != nil {
			continue // a live reader's, or another user's
		}
		if err := os.RemoveAll(dir); err != nil {
			handle(fmt.Errorf("otelrecords: remove %s, which a reader killed while it read a store left: %w", dir, err))
		}
		unlock()
	}
}
