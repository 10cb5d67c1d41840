package testsupport

import (
	"slices"
	"sync"
)

// Errors collects the errors reported to it, from any goroutine. Handle
// makes it an otel.ErrorHandler (otel.SetErrorHandler), and its method
// value a store's error handler (badgerstore.WithErrorHandler(e.Handle)).
// The zero value is ready to use.
type Errors struct {
	mu  sync.Mutex
	got []error
}

// Handle records err.
func (e *Errors) Handle(err error) {
	e.mu.Lock()
	e.got = append(e.got, err)
	e.mu.Unlock()
}

// All returns the errors recorded so far, oldest first.
func (e *Errors) All() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}
