package badgerstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/spool"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/sessions/sessionstest"
)

func TestSharedConformance(t *testing.T) {
	sessionstest.TestStore(t, func(t *testing.T) sessions.Store {
		return badgerstore.NewShared(filepath.Join(t.TempDir(), "store"))
	})
}

func entries(kv ...string) []sessions.Entry {
	var es []sessions.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		es = append(es, sessions.Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return es
}

func keysIn(t *testing.T, s sessions.Store) []string {
	t.Helper()
	var out []string
	for e, err := range s.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(e.Key))
	}
	return out
}

func TestSharedTouchesNothingUntilWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := badgerstore.NewShared(dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a Shared store that never wrote created %s", dir)
	}
}

func TestSharedLetsGoWhenIdle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := badgerstore.NewShared(dir)
	defer s.Close()
	s.SetIdleRelease(20 * time.Millisecond)
	if err := s.Write(entries("k", "v")); err != nil {
		t.Fatal(err)
	}
	if _, err := badgerstore.Open(dir, badgerstore.WithReadOnly()); !errors.Is(err, badgerstore.ErrLocked) {
		t.Fatalf("open beside a Shared store in use = %v, want ErrLocked", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
		if err == nil {
			st.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle Shared store never let go: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// It opens again for the next write.
	if err := s.Write(entries("k2", "v")); err != nil {
		t.Fatal(err)
	}
	if got := keysIn(t, s); len(got) != 2 {
		t.Fatalf("keys = %q", got)
	}
	if opens, _ := s.Opens(); opens < 2 {
		t.Fatalf("opens = %d, want a reopen after the idle release", opens)
	}
}

func TestSharedYieldsToAWaiter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := badgerstore.NewShared(dir)
	defer s.Close()
	if err := s.Write(entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	// Another process (pid 1 here) asks for the store.
	if err := os.WriteFile(filepath.Join(dir, "otelrecords.waiting"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(entries("b", "2")); err != nil {
		t.Fatal(err)
	}
	st, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatalf("the writer did not let the store go for a waiter: %v", err)
	}
	st.Close()
	// It stays away briefly, then writes again.
	if err := s.Write(entries("c", "3")); !errors.Is(err, badgerstore.ErrLocked) {
		t.Fatalf("write right after yielding = %v, want ErrLocked (staying away)", err)
	}
	time.Sleep(300 * time.Millisecond)
	os.Remove(filepath.Join(dir, "otelrecords.waiting"))
	if err := s.Write(entries("c", "3")); err != nil {
		t.Fatal(err)
	}
}

func TestSpoolMergedByNextOpener(t *testing.T) {
	for _, reader := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "store")
		w := badgerstore.NewShared(dir)
		if err := w.Write(entries("a", "1")); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if err := spool.Write(dir, entries("b", "2", "c", "3")); err != nil {
			t.Fatal(err)
		}
		if err := spool.Write(dir, entries("c", "3b")); err != nil {
			t.Fatal(err)
		}
		if !spool.Has(dir) {
			t.Fatal("spool.Has = false after spool.Write")
		}
		var st sessions.Store
		if reader {
			s, err := badgerstore.OpenWait(context.Background(), dir, nil, badgerstore.WithReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			st = s
		} else {
			s := badgerstore.NewShared(dir)
			if err := s.Write(nil); err != nil { // any use opens, and merges
				t.Fatal(err)
			}
			st = s
		}
		var got []string
		for e, err := range st.Scan(nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(e.Key)+"="+string(e.Value))
		}
		st.Close()
		if want := "[a=1 b=2 c=3b]"; fmtList(got) != want {
			t.Fatalf("reader=%v: store after merge = %v, want %s (later spool files win)", reader, got, want)
		}
		if spool.Has(dir) {
			t.Fatalf("reader=%v: spool left after merge", reader)
		}
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

func TestBadSpoolFileSetAside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := spool.Write(dir, entries("a", "1")); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(spool.Dir(dir), "00000000000000000001-1.cbor")
	if err := os.WriteFile(bad, []byte{0xff, 0xfe}, 0o600); err != nil {
		t.Fatal(err)
	}
	var reported []error
	s := badgerstore.NewShared(dir, badgerstore.WithErrorHandler(func(err error) { reported = append(reported, err) }))
	defer s.Close()
	if got := keysIn(t, s); fmtList(got) != "[a]" {
		t.Fatalf("keys = %v, want the good spool file merged", got)
	}
	if _, err := os.Stat(bad + ".bad"); err != nil {
		t.Fatalf("the bad spool file was not set aside: %v", err)
	}
	if len(reported) != 1 {
		t.Fatalf("reported %v, want one report of the bad file", reported)
	}
}

func TestOpenWaitRecoversCrashedStoreAndWaits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	holder, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	waited := 0
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = badgerstore.OpenWait(ctx, dir, func(error) { waited++ }, badgerstore.WithReadOnly())
	if !errors.Is(err, badgerstore.ErrLocked) || !errors.Is(err, context.DeadlineExceeded) || waited != 1 {
		t.Fatalf("OpenWait on a held store = %v after %d wait notices; want ErrLocked, the deadline, and one notice", err, waited)
	}
	// The holder lets go while OpenWait waits: it gets in.
	go func() {
		time.Sleep(50 * time.Millisecond)
		holder.Close()
	}()
	st, err := badgerstore.OpenWait(context.Background(), dir, nil, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
}

// Two writers of one process on one store (two TracerProviders, say) take
// turns too: a busy one yields to the other's request.
func TestTwoSharedInOneProcessTakeTurns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	busy := badgerstore.NewShared(dir)
	defer busy.Close()
	other := badgerstore.NewShared(dir)
	defer other.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			busy.Write(entries(fmt.Sprint("busy", i), "x")) // never idle long enough to let go on its own
			time.Sleep(10 * time.Millisecond)
		}
	}()
	defer func() { close(stop); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := other.Write(entries("other", "y"))
		if err == nil {
			break
		}
		if !errors.Is(err, badgerstore.ErrLocked) || time.Now().After(deadline) {
			t.Fatalf("second writer of the process never got in: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
