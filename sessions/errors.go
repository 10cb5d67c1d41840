package sessions

import "errors"

// ErrClosed is returned by a Store used after Close.
var ErrClosed = errors.New("otelrecords: store closed")
