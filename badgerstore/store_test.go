package badgerstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/ground/env"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/sessions/sessionstest"
)

// childEnv, when set in the environment of this test binary, makes TestMain
// act as a helper process (see runChild) instead of running tests.
const childEnv = "BADGERSTORE_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role == "reader" {
		readerChild(os.Getenv("BADGERSTORE_TEST_DIR"))
		return
	} else if role != "" {
		child(role, os.Getenv("BADGERSTORE_TEST_DIR"))
		return
	}
	os.Exit(m.Run())
}

// child is the helper process: "hold" opens the store, says "ready" and
// holds it until its stdin closes; "crash" writes one entry and exits
// without closing, as a killed writer would.
func child(role, dir string) {
	s, err := Open(dir)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	switch role {
	case "hold":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = s.Close()
	case "crash":
		if err := s.Write([]sessions.Entry{{Key: []byte("k"), Value: []byte("acknowledged")}}); err != nil {
			fmt.Println("write:", err)
			os.Exit(2)
		}
		fmt.Println("written")
		os.Exit(0) // no Close: Badger's log is left unreplayed
	}
}

// readAll returns every entry of the store in dir.
func readAll(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	return testsupport.EntriesIn(t, func() (sessions.Store, error) {
		return Open(dir, WithReadOnly(), WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
	})
}

// open opens a read-write store in a new directory under t.TempDir, failing
// the test on error, and closes it at cleanup. Badger's warnings fail the
// test: a healthy store has none.
func open(t *testing.T, opts ...Option) *Store {
	t.Helper()
	var log testsupport.Errors
	s, err := Open(filepath.Join(t.TempDir(), "store"), append([]Option{WithErrorHandler(log.Handle)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, err := range log.All() {
			t.Errorf("error handler: %v", err)
		}
	})
	return s
}

func write(t *testing.T, s *Store, kv ...string) {
	t.Helper()
	var es []sessions.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		es = append(es, sessions.Entry{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	if err := s.Write(es); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func scan(t *testing.T, s *Store) map[string]string {
	t.Helper()
	got := map[string]string{}
	for e, err := range s.Scan(nil, nil) {
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		got[string(e.Key)] = string(e.Value)
	}
	return got
}

func TestConformance(t *testing.T) {
	sessionstest.TestStore(t, func(t *testing.T) sessions.Store { return open(t) })
}

func TestLockedInProcess(t *testing.T) {
	s := open(t)
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"read-write", nil},
		{"read-only", []Option{WithReadOnly()}},
	} {
		s2, err := Open(s.Dir(), tc.opts...)
		if err == nil {
			s2.Close()
			t.Fatalf("second %s Open of a directory open read-write succeeded", tc.name)
		}
		checkLocked(t, err)
	}
	// The failed opens left the first Store working.
	write(t, s, "k", "v")
}

func checkLocked(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrLocked) {
		t.Errorf("Open of a locked store = %v, want errors.Is(err, ErrLocked)", err)
	}
	if !strings.Contains(err.Error(), badgerLockText) {
		t.Errorf("Open of a locked store = %q, want Badger's text %q in it", err, badgerLockText)
	}
}

func TestLockedAcrossProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=hold", "BADGERSTORE_TEST_DIR="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("child: %q", line)
	}
	_, err = Open(dir)
	checkLocked(t, err)
	_, err = Open(dir, WithReadOnly())
	checkLocked(t, err)

	stdin.Close() // the child closes its store and exits
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after the other process closed: %v", err)
	}
	s.Close()
}

func TestReadOnlyMissing(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "a", "missing")
	_, err := Open(missing, WithReadOnly())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only Open of a missing directory = %v, want errors.Is(err, fs.ErrNotExist)", err)
	}
	if want := "otelrecords: no store at " + missing; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty, WithReadOnly()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only Open of an empty directory = %v, want errors.Is(err, fs.ErrNotExist)", err)
	}
	// Nothing was created: base holds only the empty directory, still empty.
	if names := dirNames(t, base); !slices.Equal(names, []string{"empty"}) {
		t.Errorf("after read-only opens, %s holds %q", base, names)
	}
	if names := dirNames(t, empty); len(names) != 0 {
		t.Errorf("after a read-only open, %s holds %q", empty, names)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestReadOnly(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("Badger has no read-only mode here")
	}
	w := open(t)
	write(t, w, "a", "1", "b", "2")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var log testsupport.Errors
	r1, err := Open(w.Dir(), WithReadOnly(), WithErrorHandler(log.Handle))
	if err != nil {
		t.Fatalf("read-only Open after the writer closed: %v", err)
	}
	defer r1.Close()
	r2, err := Open(w.Dir(), WithReadOnly(), WithErrorHandler(log.Handle))
	if err != nil {
		t.Fatalf("second read-only Open beside the first: %v", err)
	}
	defer r2.Close()
	if got, want := scan(t, r1), map[string]string{"a": "1", "b": "2"}; !mapsEqual(got, want) {
		t.Errorf("read-only Scan = %v, want %v", got, want)
	}
	if err := r1.Write([]sessions.Entry{{Key: []byte("c")}}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Write on a read-only store = %v, want errors.Is(err, ErrReadOnly)", err)
	}
	if _, err := r1.DeleteRange(nil, nil, nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("DeleteRange on a read-only store = %v, want errors.Is(err, ErrReadOnly)", err)
	}
	if _, err := Open(w.Dir()); !errors.Is(err, ErrLocked) {
		t.Errorf("read-write Open beside a reader = %v, want ErrLocked", err)
	}
	for _, err := range log.All() {
		t.Errorf("error handler: %v", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCrashRecovery kills a writer (it exits without Close) and checks
// that a reader is told to recover, and that a read-write open recovers
// everything the writer acknowledged.
// crashed returns the directory of a store whose writer, a child process,
// wrote "k" = "acknowledged" and exited without closing it, as a killed
// writer would. It skips the test where Badger has no read-only mode,
// which is what tells a crashed store from another.
func crashed(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	crashedAt(t, dir)
	return dir
}

// crashedAt makes in dir the store crashed returns.
func crashedAt(t *testing.T, dir string) {
	t.Helper()
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("Badger has no read-only mode here")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=crash", "BADGERSTORE_TEST_DIR="+dir)
	out, err := cmd.Output()
	if err != nil || string(out) != "written\n" {
		t.Fatalf("child: %v, %q", err, out)
	}
}

func TestCrashRecovery(t *testing.T) {
	dir := crashed(t)
	_, err := Open(dir, WithReadOnly())
	if !errors.Is(err, ErrNeedsRecovery) {
		t.Fatalf("read-only Open after a crash = %v, want errors.Is(err, ErrNeedsRecovery)", err)
	}
	if !strings.Contains(err.Error(), badgerTruncateText) {
		t.Errorf("error %q lacks Badger's text %q", err, badgerTruncateText)
	}

	w, err := Open(dir)
	if err != nil {
		t.Fatalf("read-write Open after a crash: %v", err)
	}
	if got := scan(t, w); got["k"] != "acknowledged" {
		t.Errorf("after recovery, Scan = %v, want k=acknowledged", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, WithReadOnly())
	if err != nil {
		t.Fatalf("read-only Open after recovery: %v", err)
	}
	defer r.Close()
	if got := scan(t, r); got["k"] != "acknowledged" {
		t.Errorf("read-only Scan after recovery = %v, want k=acknowledged", got)
	}
}

func TestDirMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dir := filepath.Join(t.TempDir(), "parent", "store")
	s, err := Open(dir, WithErrorHandler(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != dirMode {
			t.Errorf("%s has mode %v, want %v", d, got, fs.FileMode(dirMode))
		}
	}
}

func TestOpenEmptyName(t *testing.T) {
	if _, err := Open(""); err == nil {
		t.Fatal(`Open("") succeeded`)
	}
}

// TestQuietStderr checks that nothing of Badger reaches os.Stderr during a
// store's life. Badger's default logger binds os.Stderr when its options are
// made, so a pipe swapped in before Open catches any line that was not
// routed through our logger.
func TestQuietStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	captured := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		captured <- b
	}()
	func() {
		defer func() { os.Stderr = saved }()
		var log testsupport.Errors
		s, err := Open(filepath.Join(t.TempDir(), "store"), WithErrorHandler(log.Handle))
		if err != nil {
			t.Error(err)
			return
		}
		write(t, s, "a", "1", "b", strings.Repeat("x", 2<<20)) // one value in the value log
		scan(t, s)
		if _, err := s.DeleteRange(nil, nil, nil); err != nil {
			t.Error(err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		// And again, replaying what the first left.
		s, err = Open(s.Dir(), WithErrorHandler(log.Handle))
		if err != nil {
			t.Error(err)
			return
		}
		s.Close()
		for _, err := range log.All() {
			t.Errorf("error handler: %v", err)
		}
	}()
	w.Close()
	if out := <-captured; len(out) > 0 {
		t.Errorf("Badger wrote to stderr:\n%s", out)
	}
}

// recordingLogger is a badger.Logger that keeps every line: to show what
// the adapter drops.
type recordingLogger struct {
	mu    sync.Mutex
	infos int
}

func (l *recordingLogger) Errorf(string, ...any)   {}
func (l *recordingLogger) Warningf(string, ...any) {}
func (l *recordingLogger) Debugf(string, ...any)   {}
func (l *recordingLogger) Infof(string, ...any) {
	l.mu.Lock()
	l.infos++
	l.mu.Unlock()
}

func TestLogger(t *testing.T) {
	// Badger does talk at INFO on an ordinary open and close: there is
	// something to drop.
	rec := &recordingLogger{}
	opt := badgerOptions(filepath.Join(t.TempDir(), "store"), config{handle: func(error) {}}, nil).WithLogger(rec)
	db, err := badger.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if rec.infos == 0 {
		t.Error("Badger logged nothing at INFO on open and close; the test of the adapter below proves less")
	}

	var log testsupport.Errors
	l := logger{handle: log.Handle}
	l.Infof("info %d", 1)
	l.Debugf("debug %d", 2)
	l.Warningf("cache might be too small: %s\n", "block cache")
	l.Errorf("Received err: %v. Cleaning up...", errors.New("boom"))
	got := log.All()
	want := []string{
		"otelrecords: badger warning: cache might be too small: block cache",
		"otelrecords: badger error: Received err: boom. Cleaning up...",
	}
	if len(got) != len(want) {
		t.Fatalf("handler got %q, want %q", got, want)
	}
	for i := range got {
		if got[i].Error() != want[i] {
			t.Errorf("handler got %q, want %q", got[i], want[i])
		}
	}
}

// TestErrorHandler checks that Badger's own errors reach the handler: a
// store with a value-log file whose name Badger cannot parse fails to
// open, and Badger reports the failure at ERROR as it cleans up. (Damaged
// files, a key registry say, are caught before Badger sees them: see
// verify.go.)
func TestErrorHandler(t *testing.T) {
	s := open(t)
	dir := s.Dir()
	write(t, s, "k", "v")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.vlog"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var log testsupport.Errors
	s2, err := Open(dir, WithErrorHandler(log.Handle))
	if err == nil {
		s2.Close()
		t.Fatal("Open of a store with an unparsable value-log name succeeded")
	}
	if errors.Is(err, ErrLocked) || errors.Is(err, ErrNeedsRecovery) {
		t.Errorf("Open error %v misclassified", err)
	}
	got := log.All()
	if len(got) == 0 {
		t.Fatalf("error handler received nothing; Open returned %v", err)
	}
	if !strings.HasPrefix(got[0].Error(), "otelrecords: badger error: ") {
		t.Errorf("handler got %q", got[0])
	}
}

// TestOpenRecoversPanic checks that a panic of Badger in the calling
// goroutine comes back as an error. Badger panics on a zero block cache
// with compression on.
func TestOpenRecoversPanic(t *testing.T) {
	opt := badgerOptions(filepath.Join(t.TempDir(), "store"), config{handle: func(error) {}}, nil).WithBlockCacheSize(0)
	db, err := openBadger(opt)
	if err == nil {
		db.Close()
		t.Fatal("openBadger with a zero block cache succeeded")
	}
	if !strings.Contains(err.Error(), "panicked") {
		t.Errorf("openBadger = %v, want the panic as an error", err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(env.Dir, "/some/where")
	if got, err := DefaultDir(); err != nil || got != "/some/where" {
		t.Errorf("DefaultDir with %s set = %q, %v", env.Dir, got, err)
	}
	t.Setenv(env.Dir, "")
	got, err := DefaultDir()
	if err != nil {
		t.Skipf("no user cache directory here: %v", err)
	}
	cache, _ := os.UserCacheDir()
	if want := filepath.Join(cache, "otelrecords", "default"); got != want {
		t.Errorf("DefaultDir = %q, want %q", got, want)
	}
}

// TestLargeValuesWhileWriting scans values kept in the value log and, from
// the loop body, writes enough to rotate the value-log file being read.
// Yielding such a value from inside Badger's read would hold that file's
// read lock while the rotation waits for its write lock (badger issue
// #315).
func TestLargeValuesWhileWriting(t *testing.T) {
	s := open(t)
	big := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, valueThreshold+1) }
	var es []sessions.Entry
	for i := range 3 {
		es = append(es, sessions.Entry{Key: fmt.Appendf(nil, "a%d", i), Value: big(i)})
	}
	if err := s.Write(es); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		i := 0
		for e, err := range s.Scan([]byte("a"), []byte("b")) {
			if err != nil {
				done <- err
				return
			}
			if !bytes.Equal(e.Value, big(i)) {
				done <- fmt.Errorf("entry %q: wrong value", e.Key)
				return
			}
			if i == 0 {
				var more []sessions.Entry
				for j := range 2 * valueLogFileSize / valueThreshold {
					more = append(more, sessions.Entry{Key: fmt.Appendf(nil, "b%03d", j), Value: big(j)})
				}
				if err := s.Write(more); err != nil {
					done <- err
					return
				}
				if _, err := s.DeleteRange([]byte("b"), nil, nil); err != nil {
					done <- err
					return
				}
			}
			i++
		}
		if i != 3 {
			done <- fmt.Errorf("scanned %d entries, want 3", i)
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("writing while scanning large values did not finish: deadlock")
	}
}

func TestCloseEndsScan(t *testing.T) {
	s := open(t)
	write(t, s, "a", "1", "b", "2", "c", "3")
	started, closing := make(chan struct{}), make(chan error)
	var scanErr error
	n := 0
	go func() {
		for _, err := range s.Scan(nil, nil) {
			if err != nil {
				scanErr = err
				break
			}
			n++
			if n == 1 {
				close(started)
				time.Sleep(50 * time.Millisecond) // let Close begin and wait
			}
		}
		close(closing)
	}()
	<-started
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	<-closing
	if n != 1 || !errors.Is(scanErr, sessions.ErrClosed) {
		t.Errorf("Scan cut by Close: %d entries then %v; want 1 then ErrClosed", n, scanErr)
	}
	if _, err := s.DeleteRange(nil, nil, nil); !errors.Is(err, sessions.ErrClosed) {
		t.Errorf("DeleteRange after Close = %v, want ErrClosed", err)
	}
	if err := s.Write(nil); !errors.Is(err, sessions.ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	s := open(t)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				key := fmt.Appendf(nil, "g%d/%03d", g, i)
				if err := s.Write([]sessions.Entry{{Key: key, Value: key}}); err != nil {
					t.Error(err)
					return
				}
				for _, err := range s.Scan(fmt.Appendf(nil, "g%d/", g), fmt.Appendf(nil, "g%d0", g)) {
					if err != nil {
						t.Error(err)
						return
					}
				}
				if i%10 == 9 {
					if _, err := s.DeleteRange(fmt.Appendf(nil, "g%d/", g), key, nil); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if got := len(scan(t, s)); got != 4 {
		t.Errorf("%d keys left, want 4 (the last of each writer)", got)
	}
}
