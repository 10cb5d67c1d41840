package badgerstore

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/otelrecords/otelrecords/internal/spool"
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
		if _, err := os.Stat(filepath.Join(dir, "otelrecords.waiting")); err != nil {
			t.Fatalf("OpenWait left no request for the holder: %v", err)
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
