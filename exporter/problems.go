package exporter

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
)

// handle reports a write error that no caller is waiting for, once per
// failing streak, and — once — that a store stayed busy so long that
// records went to its spool. Waiting for a store another process holds is
// normal operation and reported by nobody (it is counted in
// Stats.BusyWaits).
func (e *Exporter) handle(err error) {
	e.reportSpooled()
	if err == nil {
		e.failing = false
		return
	}
	if !e.failing {
		e.failing = true
		otel.Handle(fmt.Errorf("otelrecords: writing records: %w (records stay queued and are retried; past %d MiB of them they go to the store's spool, or the oldest are dropped, reported once)", err, recorder.SpillBytes>>20))
	}
}

// reportSpooled reports, once, that records went to the store's spool.
func (e *Exporter) reportSpooled() {
	if e.reported.Reported("spooled") {
		return
	}
	// Records spooled because the store failed writes are the Recorder's
	// to report (recorder.Recorder.shed): they are not about a busy store.
	if s := e.rec.Stats(); s.Spooled > s.SpooledUnwritable {
		e.reported.Once("spooled", fmt.Errorf("otelrecords: another process held the store %s: a write waited %v for it, then set %d records aside in its spool, which the next process to open it writes (see Stats().Spooled; a write waits at most %v, less once %d spans queue behind it or 8 MiB of records wait, and not at Shutdown)",
			e.dir, s.FirstSpoolWait.Round(time.Millisecond), s.Spooled-s.SpooledUnwritable, busyWait, e.pressureAt()))
	}
}

// isStoreSpan reports whether a span comes from Badger itself, which
// traces its compactions and value-log GC on the global TracerProvider
// with an unnamed tracer (the SDK names it sdkTracerName). Recording them
// would record our own writes, and each record written can cause more
// compaction.
func isStoreSpan(s sdktrace.ReadOnlySpan) bool {
	scope := s.InstrumentationScope().Name
	return (scope == "" || scope == sdkTracerName) && strings.HasPrefix(s.Name(), "Badger.")
}

// sdkTracerName is the name the SDK gives a tracer asked for without one.
const sdkTracerName = "go.opentelemetry.io/otel/sdk/tracer"
