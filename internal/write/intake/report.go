package intake

import (
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
)

// A Reporter hands otel.Handle the first problem of each class; later ones
// are only counted (in Stats), so a hot loop with a bad attribute does not
// flood the host's logs. Its zero value is ready; it is safe for
// concurrent use.
type Reporter struct {
	seen sync.Map // class -> struct{}
}

// Once reports err (unless nil) the first time a problem of its class
// occurs.
func (r *Reporter) Once(class string, err error) {
	if err == nil {
		return
	}
	if _, seen := r.seen.LoadOrStore(class, struct{}{}); !seen {
		otel.Handle(fmt.Errorf("%w (reported once; later ones are counted in Stats)", err))
	}
}

// Reported reports whether a problem of class was reported: a caller may
// skip building a report that would not be sent.
func (r *Reporter) Reported(class string) bool {
	_, seen := r.seen.Load(class)
	return seen
}
