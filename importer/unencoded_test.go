package importer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/importer/internal/unencoded"
	"github.com/otelrecords/otelrecords/internal/ground/clock"
	"github.com/otelrecords/otelrecords/sessions"
)

// asCame stands for the Collector's records processor in front of a
// ForwardOnly Importer (collector/origins.go): it notes the records that
// are spans as they came while their request is in flight, and hands a
// noted record on as its span, forgetting the note as it does — before
// downstream says whether it took the batch. A record not noted is made
// again from its value: a placeholder (unencoded.Value) then is lost.
type asCame struct {
	mu           sync.Mutex
	live         map[uint64]string    // the origins of the requests in flight: their spans' names
	notes        map[[2]uint64]uint64 // by session and seq: the origin noted
	calls        int
	fail         func(call int) bool
	entered      chan struct{} // the first forward is under way
	release      chan struct{} // the first forward goes on
	noted        chan uint64
	handed       map[string]int
	placeholders int
}

func newAsCame(fail func(int) bool) *asCame {
	return &asCame{live: map[uint64]string{}, notes: map[[2]uint64]uint64{}, fail: fail,
		entered: make(chan struct{}), release: make(chan struct{}), noted: make(chan uint64, 16), handed: map[string]int{}}
}

func (a *asCame) note(r AsReceived) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.live[r.Origin]; !ok {
		return false
	}
	a.notes[[2]uint64{uint64(r.Session), r.Seq}] = r.Origin
	a.noted <- r.Origin
	return true
}

func (a *asCame) forward(es []sessions.Entry) error {
	a.mu.Lock()
	a.calls++
	call := a.calls
	if call == 1 {
		a.mu.Unlock()
		close(a.entered)
		<-a.release
		a.mu.Lock()
	}
	defer a.mu.Unlock()
	var got []string
	var rec sessions.Stamped[sessions.Record]
	var row sessions.Session
	for _, e := range es {
		_, id, seq, ok := EntryStamp(e)
		if !ok {
			continue
		}
		if o, ok := a.notes[[2]uint64{uint64(id), seq}]; ok {
			delete(a.notes, [2]uint64{uint64(id), seq})
			got = append(got, a.live[o])
			continue
		}
		if unencoded.Is(e.Value) {
			a.placeholders++
			continue
		}
		if kind, err := DecodeEntry(e, &rec, &row); err == nil && kind != "sessions" {
			got = append(got, rec.Record.Name)
		}
	}
	if a.fail(call) {
		return errors.New("downstream refuses the batch")
	}
	for _, n := range got {
		a.handed[n]++
	}
	return nil
}

// importAsCame imports the span named name, of its own trace, as request
// origin.
func (a *asCame) importAsCame(im *Importer, origin uint64, name string) error {
	a.mu.Lock()
	a.live[origin] = name
	a.mu.Unlock()
	s := span(name, 1, 0, int(origin), changed("artifact")...)
	s.TraceID, s.Origin = trace.TraceID{byte(origin), 9}, origin
	_, err := im.Import(context.Background(), Batch{Resource: node, Spans: []Span{s}})
	a.mu.Lock()
	delete(a.live, origin) // the request is done: its notes go
	for k, o := range a.notes {
		if o == origin {
			delete(a.notes, k)
		}
	}
	a.mu.Unlock()
	return err
}

// Two Imports into one session queue their records unencoded while a
// third's flush holds the session; the flush that then takes both
// records fails downstream after their spans were claimed (the
// Collector forgets a note as it hands the span on). The record of the
// Import that did not run that flush must still go on, once, and never
// as its placeholder.
func TestImportAnotherImportsFailedFlushFillsWhatItQueuedUnencoded(t *testing.T) {
	a := newAsCame(func(call int) bool { return call == 2 })
	ic := Config{ForwardOnly: true, Forward: a.forward, AsReceived: a.note}
	im, err := New(filepath.Join(t.TempDir(), "state"), ic, WithClock(clock.NewFake(rigNow).Now), WithKeepBy(KeepBySession))
	if err != nil {
		t.Fatal(err)
	}
	im.stopLoop()
	errs := make(chan error, 3)
	go func() { errs <- a.importAsCame(im, 1, "z") }() // keeps the session; its flush waits
	<-a.entered
	for o := uint64(2); o <= 3; o++ {
		go func() { errs <- a.importAsCame(im, o, fmt.Sprint("span ", o)) }()
		for got := <-a.noted; got != o; got = <-a.noted { // z's own note first
		}
		im.Stats() // the Import has queued its record and let go of the lock
	}
	close(a.release)
	failed := 0
	for range 3 {
		if err := <-errs; err != nil {
			failed++
		}
	}
	if err := im.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if failed != 1 {
		t.Errorf("%d Imports failed, want the one whose flush downstream refused", failed)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.placeholders != 0 {
		t.Errorf("%d placeholders handed on as records", a.placeholders)
	}
	for _, n := range []string{"z", "span 2", "span 3"} {
		if a.handed[n] != 1 {
			t.Errorf("%q handed on %d times, want once (handed: %v)", n, a.handed[n], a.handed)
		}
	}
}
