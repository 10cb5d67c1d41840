package badgerstore

import (
	"context"
	"errors"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/sessions"
)

// Badger runs inside a synctest bubble (its goroutines start and end with
// the Store), so the waiting is timed on the fake clock.
func TestOpenWaitWaitsForTheHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	synctest.Test(t, func(t *testing.T) {
		holder, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		waited := 0
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = OpenWait(ctx, dir, func(error) { waited++ }, WithReadOnly())
		if !errors.Is(err, ErrLocked) || !errors.Is(err, context.DeadlineExceeded) || waited != 1 {
			t.Fatalf("OpenWait on a held store = %v after %d wait notices; want ErrLocked, the deadline, and one notice", err, waited)
		}
		// A waiter that gives up takes its request back.
		if _, err := os.Stat(filepath.Join(dir, "otelrecords.waiting")); err == nil {
			t.Fatal("OpenWait left its request behind after giving up")
		}
		// The holder lets go while OpenWait waits: it gets in, within one
		// retry (at most 100 ms).
		go func() {
			time.Sleep(time.Second)
			holder.Close()
		}()
		start := time.Now()
		st, err := OpenWait(context.Background(), dir, nil, WithReadOnly())
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		if waited := time.Since(start); waited < time.Second || waited > 1100*time.Millisecond {
			t.Fatalf("OpenWait got in after %v, want within 100ms of the holder letting go at 1s", waited)
		}
	})
}

func TestOpenWaitRecoversACrashedStore(t *testing.T) {
	st, err := OpenWait(context.Background(), crashed(t), nil, WithReadOnly())
	if err != nil {
		t.Fatalf("read-only OpenWait after a crash: %v", err)
	}
	defer st.Close()
	if got := scan(t, st); got["k"] != "acknowledged" {
		t.Errorf("after recovery, Scan = %v, want k=acknowledged", got)
	}
}

// A read-write Open merges the spool; so does a reader's OpenWait, which
// opens read-write briefly to do it.
func TestSpoolMergedByNextOpener(t *testing.T) {
	for _, reader := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "store")
		st, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		write(t, st, "a", "1")
		st.Close()
		for _, kv := range [][]string{{"b", "2", "c", "3"}, {"c", "3b"}} {
			es := []sessions.Entry{}
			for i := 0; i < len(kv); i += 2 {
				es = append(es, sessions.Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
			}
			if err := spool.Write(dir, es); err != nil {
				t.Fatal(err)
			}
		}
		if reader {
			st, err = OpenWait(context.Background(), dir, nil, WithReadOnly())
		} else {
			st, err = Open(dir)
		}
		if err != nil {
			t.Fatal(err)
		}
		got := scan(t, st)
		st.Close()
		if want := map[string]string{"a": "1", "b": "2", "c": "3b"}; !maps.Equal(got, want) {
			t.Fatalf("reader=%v: store after merge = %v, want %v (later spool files win)", reader, got, want)
		}
		if spool.Has(dir) {
			t.Fatalf("reader=%v: spool left after merge", reader)
		}
	}
}

// TestPoisonSpoolFileDoesNotBlockNewerOnes spools, oldest first, files
// the store can never take — an empty key, a value over Badger's 16 MiB,
// a file that does not decode — then a good one. An opener sets each bad
// file aside, reports it once in a line, and merges the good one; the
// next opener reports nothing. Before, the first was retried by every
// opener forever, reported with a 5 KB hex dump, and no newer file was
// ever merged.
func TestPoisonSpoolFileDoesNotBlockNewerOnes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	closedStore(t, dir, "a", "1")
	poison := [][]sessions.Entry{
		{{Key: []byte("ok"), Value: []byte("v")}, {Key: nil, Value: []byte("empty key")}},
		{{Key: []byte("huge"), Value: make([]byte, 17<<20)}},
	}
	for _, es := range poison {
		if err := spool.Write(dir, es); err != nil {
			t.Fatal(err)
		}
	}
	undecodable := filepath.Join(spool.Dir(dir), fmt.Sprintf("%020d-1.cbor", time.Now().UnixNano()))
	if err := os.WriteFile(undecodable, []byte{0x9f, 0xff, 0xff}, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := spool.Write(dir, []sessions.Entry{{Key: []byte("b"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}

	for _, reader := range []bool{true, false} {
		var log testsupport.Errors
		var st *Store
		var err error
		if reader {
			st, err = OpenWait(context.Background(), dir, nil, WithReadOnly(), WithErrorHandler(log.Handle))
		} else {
			st, err = Open(dir, WithErrorHandler(log.Handle))
		}
		if err != nil {
			t.Fatal(err)
		}
		got := scan(t, st)
		st.Close()
		if want := map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) {
			t.Fatalf("reader=%v: store = %v, want %v: the newer file merged, nothing of the bad ones", reader, got, want)
		}
		errs := log.All()
		if reader {
			// The first opener set them aside, and reported each once.
			if len(errs) != 3 {
				t.Fatalf("first open reported %d errors, want 3 (one per bad file): %v", len(errs), errs)
			}
			for _, err := range errs {
				if len(err.Error()) > 300 || !strings.Contains(err.Error(), ".bad") {
					t.Errorf("report of %d bytes: %.400s; want one short line saying where the file was set aside", len(err.Error()), err)
				}
			}
		} else if len(errs) != 0 {
			t.Fatalf("second open reported %v, want nothing: each bad file is reported once", errs)
		}
	}
	bad, _ := filepath.Glob(filepath.Join(spool.Dir(dir), "*.bad"))
	if len(bad) != 3 || spool.Has(dir) {
		t.Fatalf("set aside %v (spool left: %v), want the three bad files and nothing to merge", bad, spool.Has(dir))
	}
}

// TestWriteRefusesEntriesNoStoreHolds: Write refuses, before writing any
// of the batch, an entry Badger never takes, with a short error matching
// ErrInvalidEntry (Badger's own hex-dumps a kilobyte of the value).
func TestWriteRefusesEntriesNoStoreHolds(t *testing.T) {
	st := open(t)
	for name, e := range map[string]sessions.Entry{
		"empty key":    {Key: nil, Value: []byte("v")},
		"long key":     {Key: make([]byte, 65001), Value: []byte("v")},
		"Badger's key": {Key: []byte("!badger!head"), Value: []byte("v")},
		"huge value":   {Key: []byte("k"), Value: make([]byte, 16<<20+1)},
	} {
		err := st.Write([]sessions.Entry{{Key: []byte("first"), Value: []byte("v")}, e})
		if !errors.Is(err, ErrInvalidEntry) || len(err.Error()) > 200 {
			t.Errorf("%s: Write = %.300v, want a short ErrInvalidEntry", name, err)
		}
	}
	if got := scan(t, st); len(got) != 0 {
		t.Errorf("store = %v after refused batches, want nothing written", got)
	}
}

// closedStore makes a store in dir holding the keys and values kv, and
// closes it.
func closedStore(t *testing.T, dir string, kv ...string) {
	t.Helper()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	write(t, st, kv...)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}
