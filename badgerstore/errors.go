package badgerstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/otelrecords/otelrecords/internal/ground/storefs"
	"github.com/otelrecords/otelrecords/internal/store/storedir"
)

// The conditions of a store that a caller acts on, matched with errors.Is.
var (
	// ErrLocked is matched by the error Open returns when another Store,
	// in this process or another one, holds the directory: a read-write
	// Store excludes every other open, and a read-only one excludes
	// read-write opens. The error's message carries Badger's own text.
	// Open does not wait for the lock; OpenWait does.
	ErrLocked = storedir.ErrLocked

	// ErrNeedsRecovery is matched by the error a read-only Open returns
	// when the store's last writer ended without closing it (it crashed,
	// or was killed). Nothing it acknowledged is lost: the next read-write
	// Open replays Badger's log, and read-only opens work again after it.
	ErrNeedsRecovery = errors.New("otelrecords: store needs recovery by a read-write open")

	// ErrReadOnly is matched by the error Write and DeleteRange return on
	// a Store opened with WithReadOnly.
	ErrReadOnly = errors.New("otelrecords: store opened read-only")

	// ErrInvalidEntry is matched by the error Write returns for a batch
	// holding an entry no Store holds: an empty key, a key longer than
	// 65,000 bytes or starting with "!badger!" (Badger's own keys), or a
	// value larger than 16 MiB. Nothing of the batch is written, and
	// writing it again fails again. The message says which entry and why,
	// in a line (Badger's own error hex-dumps a kilobyte of the value).
	ErrInvalidEntry = errors.New("otelrecords: entry no store holds")

	// ErrRecoveryInterrupted is matched by the error Open returns where
	// there is no store because a `records doctor` run (doctor.Recover) was cut
	// short while it swapped the damaged store for the recovered one. The
	// message says where the records are; doctor.Recover finishes the
	// run.
	ErrRecoveryInterrupted = storedir.ErrInterrupted

	// ErrUnsafeFile is matched by the error Open, OpenWait, doctor.Verify
	// and doctor.Recover return for a store holding a file otelrecords
	// will not open: a symbolic link, a FIFO, a device or a socket where a store
	// keeps regular files. The message names the file; nothing was
	// changed. Remove it (or put what it links to in its place) and open
	// again.
	ErrUnsafeFile = storefs.ErrRefused
)

// Badger's errors carry no sentinel that survives its wrapping (it formats
// the cause with %+v), so they are recognised by their text.
const (
	// badgerLockText opens Badger's error for a directory whose flock is
	// held by another open.
	badgerLockText = "Cannot acquire directory lock"
	// badgerTruncateText is the text of badger.ErrTruncateNeeded, which a
	// read-only open returns for a log that a crashed writer left unreplayed.
	badgerTruncateText = "Log truncate required"
)

// openError classifies an error of badger.Open for dir, keeping Badger's
// text in the message.
func openError(dir string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, badgerLockText):
		return fmt.Errorf("%w: %w", ErrLocked, err)
	case strings.Contains(msg, badgerTruncateText):
		return fmt.Errorf("%w: %s: %w", ErrNeedsRecovery, dir, err)
	}
	return fmt.Errorf("otelrecords: open store %s: %w", dir, err)
}
