// Package turns is how processes take turns at a store that Badger lets
// one of them open at a time: the waiting marker (docs/FORMAT.md §7).
//
// An opener that finds the store busy leaves its token in a small file
// beside the data and retries; the writer holding the store reads the file
// after each write and, finding a fresh request that is not its own, lets
// the store go. The file is a request, not a lock: it is never removed,
// and a stale one is ignored, so a waiter that died asks nothing. Badger
// ignores files it does not know.
//
// The reader that waits is badgerstore.OpenWait; the writer that yields is
// internal/write/sharedstore. The marker's name, its tokens and what counts as
// fresh live here, between them.
package turns

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
)

const (
	// file is the marker's name, inside the store's directory.
	file = "otelrecords.waiting"
	// fresh is how long a marker counts as a request after it was last
	// written. A waiter rewrites it at every retry (at least every few
	// hundred milliseconds), so only a waiter that gave up lets it age.
	fresh = 2 * time.Second
)

// ReaderToken returns the token of a reader of this process: its pid.
func ReaderToken() string { return strconv.Itoa(os.Getpid()) }

// writers numbers the writers of this process, so two of them on one
// store (two TracerProviders of one program) take turns too.
var writers atomic.Int64

// WriterToken returns the token of a new writer of this process,
// "<pid>/<n>": no other writer of any process has it.
func WriterToken() string { return fmt.Sprintf("%d/%d", os.Getpid(), writers.Add(1)) }

// Ask leaves token in the marker of the store in dir, asking its holder to
// let it go. A store is untrusted input (it may come from a tarball), so
// the marker is written only as a regular file inside dir
// (internal/ground/storefs): a marker that is a symbolic link, a FIFO or anything
// else is refused with an error naming it, never followed, truncated or
// opened for writing. A store whose directory cannot be written (a reader
// of a read-only copy) cannot ask either; a waiter may ignore the error
// and go on waiting.
func Ask(dir, token string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("otelrecords: ask for the store: %w", err)
	}
	defer root.Close()
	f, err := storefs.Open(root, file, os.O_WRONLY|os.O_CREATE, 0o600, maxMarker)
	if err != nil {
		return fmt.Errorf("otelrecords: ask for the store: %w", err)
	}
	defer f.Close()
	// Truncated only now that it is known to be the regular file itself.
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("otelrecords: ask for the store: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		return fmt.Errorf("otelrecords: ask for the store: %w", err)
	}
	return nil
}

// Asked reports whether an opener other than token asked for the store in
// dir while its holder had it, since it opened it at since: the marker is
// fresh, was written at most fresh before since (a request made while the
// holder was opening), and holds another token. A marker that is not a
// regular file, or is longer than any token, asks nothing.
func Asked(dir, token string, since time.Time) bool {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	// Lstat first: the cheap check, and the common answer (no request).
	fi, err := root.Lstat(file)
	if err != nil || time.Since(fi.ModTime()) > fresh || fi.ModTime().Before(since.Add(-fresh)) {
		return false
	}
	b, err := storefs.ReadFile(root, file, maxMarker)
	if err != nil {
		return false
	}
	return strings.TrimSpace(string(b)) != token
}

// Withdraw takes back token's request: it removes the marker if it still
// holds token, so that no process leaves its marker behind once it has the
// store or has given up waiting (the directory then holds what it would
// hold had no one waited). A marker another opener wrote since is left to
// it; one that is not a regular file, or cannot be removed (a read-only
// store), is left as it is.
func Withdraw(dir, token string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	b, err := storefs.ReadFile(root, file, maxMarker)
	if err != nil || strings.TrimSpace(string(b)) != token {
		return
	}
	_ = root.Remove(file)
}

// maxMarker bounds the marker: a token is a pid, a slash and a counter,
// well under it.
const maxMarker = 64
