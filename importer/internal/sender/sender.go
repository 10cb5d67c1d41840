// Package sender is what an Importer reads of a sender from the Resource
// its spans come with: which session they belong to, whether they are a
// recorded session sent again, and what its session row says of the
// process (OpenTelemetry's semantic conventions).
package sender

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The Resource attributes that say which process sent a span, and
// describe it in its session row.
const (
	instanceIDKey = attribute.Key("service.instance.id")
	pidKey        = attribute.Key("process.pid")
	osTypeKey     = attribute.Key("os.type")
	hostArchKey   = attribute.Key("host.arch")
)

// Key says which session a Resource's spans belong to: the sender's
// records.session.id, else its service.instance.id, else the Resource
// as a whole (process.pid among it, when the sender says it).
func Key(res []attribute.KeyValue) string {
	for _, k := range []attribute.Key{spanbridge.SessionIDKey, instanceIDKey} {
		for _, kv := range res {
			if kv.Key == k && kv.Value.Emit() != "" {
				return string(k) + "=" + kv.Value.Emit()
			}
		}
	}
	// NewSet sorts the slice it is given: a copy, so that the caller's
	// Resource stays as it was (and races with no other reader).
	set := attribute.NewSet(slices.Clone(res)...)
	return "resource:" + set.Encoded(attribute.DefaultEncoder())
}

// Replayed reports whether a Resource says it is a recorded session sent
// again (records.session.id, which `records replay` sets).
func Replayed(res []attribute.KeyValue) bool {
	for _, kv := range res {
		if kv.Key == spanbridge.SessionIDKey {
			return true
		}
	}
	return false
}

// Process is what a session row says of the sender: its pid, OS and
// architecture from its Resource; zero values where it says nothing.
func Process(res []attribute.KeyValue) *recorder.Process {
	p := &recorder.Process{}
	for _, kv := range res {
		switch kv.Key {
		case pidKey:
			if kv.Value.Type() == attribute.INT64 {
				p.PID = int(kv.Value.AsInt64())
			}
		case osTypeKey:
			p.OS = kv.Value.Emit()
		case hostArchKey:
			p.Arch = kv.Value.Emit()
		}
	}
	return p
}

// Label returns the sender's own label for its session (the last
// records.session.label), and whether it gives one.
func Label(res []attribute.KeyValue) (label string, ok bool) {
	for _, kv := range res {
		if kv.Key == spanbridge.SessionLabelKey {
			label, ok = kv.Value.Emit(), true
		}
	}
	return label, ok
}
