package sessions

import (
	"errors"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
)

// ErrClosed is returned by a Store used after Close.
var ErrClosed = errors.New("otelrecords: store closed")

// ErrInvalidKind is wrapped by the error a read of a kind the store cannot
// hold returns (an empty name, one with 0x00, longer than 128 bytes, or the
// reserved "sessions").
var ErrInvalidKind = keys.ErrInvalidKind

// ErrTooLarge is wrapped by the error Records.Put returns for a row or
// record no store takes: larger than a writer writes, or than a reader
// decodes (docs/FORMAT.md, "Decode limits"). Writers never write one (the
// exporter drops and counts it), so a reader would skip it as damaged.
var ErrTooLarge = errors.New("too large for a store")
