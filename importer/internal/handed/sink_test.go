package handed

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// failingWrites is a Writer refusing writes and the spool while err is
// set.
type failingWrites struct {
	err            error
	wrote, spooled []string
}

func (f *failingWrites) WriteContext(_ context.Context, es []sessions.Entry) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	f.wrote = append(f.wrote, keysOf(es)...)
	return 0, nil
}

func (f *failingWrites) Spool(es []sessions.Entry) error {
	if f.err != nil {
		return f.err
	}
	f.spooled = append(f.spooled, keysOf(es)...)
	return nil
}

// The store refusing a batch already handed on: the Recorder gives it
// again, with what came since, and only what came since is handed on —
// with records kept and without (Only), written or spooled.
func TestSinkHandsOnceWhenTheWriteFails(t *testing.T) {
	for _, only := range []bool{false, true} {
		for _, spool := range []bool{false, true} {
			var got []string
			w := &failingWrites{err: errors.New("disk full")}
			s := &Sink{W: w, Only: only, Forward: func(es []sessions.Entry) error {
				got = append(got, keysOf(es)...)
				return nil
			}}
			take := func(es []sessions.Entry) error {
				if spool {
					return s.Spool(es)
				}
				_, err := s.Take(context.Background(), es)
				return err
			}
			a := []sessions.Entry{{Key: []byte(keys.ImportRoot + "a")}, {Key: []byte("r1")}}
			if err := take(a); err == nil {
				t.Fatal("taken through a failing write")
			}
			w.err = nil
			if err := take(append(slices.Clip(a), sessions.Entry{Key: []byte("r2")})); err != nil {
				t.Fatal(err)
			}
			if err := take(a); err != nil {
				t.Fatal(err)
			}
			want := []string{keys.ImportRoot + "a", "r1", "r2", keys.ImportRoot + "a", "r1"}
			if !slices.Equal(got, want) {
				t.Errorf("Only %v, spool %v: handed on %q, want %q: each once until written, then a new batch whole", only, spool, got, want)
			}
			kept := len(w.wrote) + len(w.spooled)
			if wantKept := map[bool]int{false: 5, true: 2}[only]; kept != wantKept {
				t.Errorf("Only %v, spool %v: wrote %q, spooled %q; want %d entries", only, spool, w.wrote, w.spooled, wantKept)
			}
		}
	}
}

// Downstream refusing: nothing is written, nor set aside in the spool.
func TestSinkWritesNothingDownstreamRefused(t *testing.T) {
	w := &failingWrites{}
	s := &Sink{W: w, Forward: func([]sessions.Entry) error { return errors.New("downstream is down") }}
	es := entries("1", "2")
	if _, err := s.Take(context.Background(), es); err == nil {
		t.Error("Take succeeded with downstream refusing")
	}
	if err := s.Spool(es); err == nil {
		t.Error("Spool succeeded with downstream refusing")
	}
	if len(w.wrote)+len(w.spooled) > 0 {
		t.Errorf("wrote %q, spooled %q; want nothing", w.wrote, w.spooled)
	}
}
