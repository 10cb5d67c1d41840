package exporter

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// Register puts the exporter on tp, unless the level is off, and from then
// on SetLevel takes it off tp when the level goes to off and puts it back
// when the level leaves off. It is the way to plug the exporter in where
// the level can be off: once any span processor is registered, the SDK
// copies every ended span for it (about a third more per span than a
// provider without one), whatever the processor then does; off tp, the
// exporter costs the program's spans nothing at all.
//
// A span is recorded when the exporter is on tp both when the span starts
// and when it ends: a span that is in flight when the level goes off is
// not recorded, and its stamp is let go at once.
//
// tp.Shutdown shuts the exporter down while it is on tp. While the level
// is off it is not, so a program whose level may be off at its end calls
// the exporter's own Shutdown after tp's (a second Shutdown does nothing).
// Register the exporter on one provider, with Register or with
// sdktrace.WithSpanProcessor, not both; a later Register moves it to
// another provider.
func (e *Exporter) Register(tp *sdktrace.TracerProvider) {
	r := &e.registration
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tp != tp {
		e.takeOff()
		r.tp = tp
	}
	e.place()
}

// registration is what Register put on which provider. Each time the
// exporter goes onto the provider it does so as a new *registered: the
// SDK knows a processor by its identity, and shuts one down when it is
// taken off.
type registration struct {
	mu sync.Mutex // serialises Register and SetLevel's changes to the provider
	tp *sdktrace.TracerProvider
	on *registered // on tp now; nil while the level is off
}

// place puts the exporter on the registration's provider or takes it off,
// as the level asks. r.mu is held.
func (e *Exporter) place() {
	r := &e.registration
	switch want := r.tp != nil && !e.stopped.Load() && e.Level() != sessions.LevelOff; {
	case want && r.on == nil:
		r.on = &registered{e: e}
		r.tp.RegisterSpanProcessor(r.on)
	case !want && r.on != nil:
		e.takeOff()
	}
}

// takeOff takes the exporter's registration off its provider, and lets go
// of the stamps of the spans it started: their ends will not come through
// it. r.mu is held.
func (e *Exporter) takeOff() {
	r := &e.registration
	if r.on == nil {
		return
	}
	old := r.on
	r.on = nil
	// Retired first, so that the Shutdown the SDK calls on unregistering
	// it leaves the exporter running.
	old.retired.Store(true)
	r.tp.UnregisterSpanProcessor(old)
	// The SDK may still be in old.OnStart for spans that began before it
	// was taken off. Wait for those: any OnStart entering from now on sees
	// retired (both are sequentially consistent atomics), so after this
	// nothing stamps through old again, and what it stamped can go.
	for old.starting.Load() != 0 {
		runtime.Gosched()
	}
	e.inflight.Add(-int64(e.stamps.clear()))
}

// registered is the exporter as Register puts it on a provider: every call
// goes to the exporter, except Shutdown once the registration is retired.
type registered struct {
	e        *Exporter
	retired  atomic.Bool  // taken off the provider: no more stamps, no Shutdown
	starting atomic.Int64 // OnStart calls in progress
}

func (r *registered) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	r.starting.Add(1)
	if !r.retired.Load() {
		r.e.OnStart(ctx, s)
	}
	r.starting.Add(-1)
}

func (r *registered) OnEnd(s sdktrace.ReadOnlySpan) { r.e.OnEnd(s) }

func (r *registered) ForceFlush(ctx context.Context) error { return r.e.ForceFlush(ctx) }

// Shutdown shuts the exporter down when the provider does (tp.Shutdown),
// not when the provider is only letting go of a retired registration.
func (r *registered) Shutdown(ctx context.Context) error {
	if r.retired.Load() {
		return nil
	}
	return r.e.Shutdown(ctx)
}

// clear lets go of every stamp and returns how many there were.
func (t *stampTable) clear() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		clear(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// levelChanged puts the exporter on Register's provider or takes it off,
// after SetLevel.
func (e *Exporter) levelChanged() {
	r := &e.registration
	r.mu.Lock()
	defer r.mu.Unlock()
	e.place()
}
