package exporter_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// closeCounter is a MemStore that counts its Close calls, which the
// exporter makes once, on Shutdown.
type closeCounter struct {
	*sessions.MemStore
	closes atomic.Int32
}

func (c *closeCounter) Close() error { c.closes.Add(1); return nil }

func registered(t *testing.T, opts ...exporter.Option) (*sdktrace.TracerProvider, *exporter.Exporter, *closeCounter) {
	t.Helper()
	st := &closeCounter{MemStore: sessions.NewMemStore()}
	exp, err := exporter.New("", append(opts, exporter.WithStore(st))...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider()
	exp.Register(tp)
	return tp, exp, st
}

func end(tp *sdktrace.TracerProvider, name string) {
	_, s := tp.Tracer("test").Start(context.Background(), name, trace.WithAttributes(spanbridge.Kind("compile"), spanbridge.Changed()))
	s.End()
}

func compileNames(t *testing.T, st *closeCounter) []string {
	t.Helper()
	var got []string
	for rec, err := range sessions.NewRecords(st.MemStore).All("compile") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec.Record.Name)
	}
	return got
}

// At level off, Register leaves the provider without a processor of ours:
// the exporter sees no span, and the SDK has nothing to copy spans for.
func TestRegisterAtLevelOffStaysOffTheProvider(t *testing.T) {
	defer goleak.VerifyNone(t)
	tp, exp, st := registered(t, exporter.WithLevel(sessions.LevelOff))
	if exp.OnProvider() {
		t.Fatal("registered at level off")
	}
	for range 10 {
		end(tp, "unseen")
	}
	if s := exp.Stats(); s.Written+s.Held+s.Queued != 0 || exp.StampsHeld() != 0 {
		t.Fatalf("level off saw spans: %+v, %d stamps", s, exp.StampsHeld())
	}
	exp.SetLevel(sessions.LevelBasic)
	if !exp.OnProvider() {
		t.Fatal("not on the provider after SetLevel(basic)")
	}
	end(tp, "seen")
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := compileNames(t, st); !slices.Equal(got, []string{"seen"}) {
		t.Fatalf("recorded %q, want [seen]", got)
	}
	if n := st.closes.Load(); n != 1 {
		t.Fatalf("store closed %d times, want once by tp.Shutdown", n)
	}
}

// Off and on again: the SDK shuts a processor down when it is taken off
// the provider, which must not shut the exporter down; tp.Shutdown then
// does, once.
func TestSetLevelTakesTheExporterOffAndBack(t *testing.T) {
	defer goleak.VerifyNone(t)
	tp, exp, st := registered(t)
	if !exp.OnProvider() {
		t.Fatal("not on the provider at level basic")
	}
	end(tp, "a")
	exp.SetLevel(sessions.LevelOff)
	if exp.OnProvider() {
		t.Fatal("still on the provider at level off")
	}
	end(tp, "unseen")
	exp.SetLevel(sessions.LevelFull) // basic <-> full leaves it where it is
	exp.SetLevel(sessions.LevelBasic)
	end(tp, "b")
	if n := st.closes.Load(); n != 0 {
		t.Fatalf("store closed %d times before tp.Shutdown", n)
	}
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := compileNames(t, st); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("recorded %q, want [a b]", got)
	}
	if n := st.closes.Load(); n != 1 {
		t.Fatalf("store closed %d times, want once", n)
	}
	// After Shutdown the exporter stays off the provider.
	exp.SetLevel(sessions.LevelOff)
	exp.SetLevel(sessions.LevelBasic)
	if exp.OnProvider() {
		t.Fatal("put back on the provider after Shutdown")
	}
}

// A span in flight when the level goes off is not recorded, and its stamp
// goes at once rather than waiting for an end that will not come through
// us.
func TestSpanAcrossASwitchLeavesNoStamp(t *testing.T) {
	defer goleak.VerifyNone(t)
	tp, exp, st := registered(t)
	end(tp, "a")
	_, s := tp.Tracer("test").Start(context.Background(), "across", trace.WithAttributes(spanbridge.Kind("compile")))
	if exp.StampsHeld() != 1 {
		t.Fatalf("%d stamps held for one open span", exp.StampsHeld())
	}
	exp.SetLevel(sessions.LevelOff)
	if n := exp.StampsHeld(); n != 0 {
		t.Fatalf("%d stamps held after the level went off", n)
	}
	exp.SetLevel(sessions.LevelBasic)
	s.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := compileNames(t, st); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("recorded %q, want [a]", got)
	}
}

// At level off the exporter is not on the provider, so tp.Shutdown does
// not reach it: its own Shutdown does.
func TestShutdownAtLevelOff(t *testing.T) {
	defer goleak.VerifyNone(t)
	tp, exp, st := registered(t)
	end(tp, "a") // the store is opened, so that Shutdown has it to close
	exp.SetLevel(sessions.LevelOff)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := st.closes.Load(); n != 0 {
		t.Fatalf("store closed %d times by a provider the exporter was not on", n)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := st.closes.Load(); n != 1 {
		t.Fatalf("store closed %d times, want once", n)
	}
	exp.SetLevel(sessions.LevelBasic) // a shut-down provider takes nothing
	if exp.OnProvider() {
		t.Fatal("put back on the provider after Shutdown")
	}
}

// Spans start and end on 8 goroutines, some across a switch, while
// another goroutine switches the level off and on: once every span has
// ended, no stamp is left.
func TestSwitchesWhileSpansEnd(t *testing.T) {
	defer goleak.VerifyNone(t)
	tp, exp, st := registered(t)
	tr := tp.Tracer("test")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, outer := tr.Start(context.Background(), "outer", trace.WithAttributes(spanbridge.Kind("compile")))
				_, inner := tr.Start(ctx, "inner", trace.WithAttributes(spanbridge.Kind("compile")))
				if (g+i)%16 == 0 {
					time.Sleep(50 * time.Microsecond) // across a switch, now and then
				}
				inner.End()
				outer.End()
			}
		})
	}
	for i := range 400 {
		if i%2 == 0 {
			exp.SetLevel(sessions.LevelOff)
		} else {
			exp.SetLevel(sessions.LevelBasic)
		}
		time.Sleep(100 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	if n := exp.StampsHeld(); n != 0 {
		t.Fatalf("%d stamps held after every span ended", n)
	}
	end(tp, "last")
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := exp.Stats(); s.Dropped != 0 || s.Problems != 0 {
		t.Fatalf("stats %+v", s)
	}
	if n := st.closes.Load(); n != 1 {
		t.Fatalf("store closed %d times, want once", n)
	}
	if got := compileNames(t, st); len(got) == 0 || got[len(got)-1] != "last" {
		t.Fatalf("the last span, ended on the provider, was not recorded (%d records)", len(got))
	}
}
