package badgerstore

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestReaderOnReadOnlyMedia reads, from a read-only file system, a store
// whose writer crashed (its log not replayed) and whose spool holds
// records a writer set aside, one file of which the store would refuse.
// The reader gets every acknowledged record — the crashed writer's and the
// spooled ones, a later spool file winning — writes nothing, says how many
// spooled records it left for a writer, and reports the bad file. Before,
// OpenWait opened such a store read-write first, and on read-only media
// could not read it at all.
func TestReaderOnReadOnlyMedia(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed cleanly", true: "writer crashed"}[crash], func(t *testing.T) {
			mnt, dir := storeOnTmpfs(t, crash)
			for _, es := range [][]sessions.Entry{
				{{Key: []byte("b"), Value: []byte("2")}, {Key: []byte("c"), Value: []byte("3")}},
				{{Key: nil, Value: []byte("refused")}},
				{{Key: []byte("c"), Value: []byte("3b")}},
			} {
				if err := spool.Write(dir, es); err != nil {
					t.Fatal(err)
				}
			}
			before := badgerfmttest.FilesIn(t, dir)
			beforeSpool := badgerfmttest.FilesIn(t, spool.Dir(dir))
			testsupport.RemountReadOnly(t, mnt)
			temps, _ := filepath.Glob(filepath.Join(os.TempDir(), "otelrecords-replay-*"))

			var log testsupport.Errors
			st, err := OpenWait(context.Background(), dir, nil, WithReadOnly(), WithErrorHandler(log.Handle))
			if err != nil {
				t.Fatalf("OpenWait on read-only media: %v", err)
			}
			got := scan(t, st)
			if want := map[string]string{"k": "acknowledged", "b": "2", "c": "3b"}; !maps.Equal(got, want) {
				t.Errorf("read %v, want %v", got, want)
			}
			var ranged []string
			for e, err := range st.Scan([]byte("b"), []byte("c")) {
				if err != nil {
					t.Fatal(err)
				}
				ranged = append(ranged, string(e.Key))
			}
			if len(ranged) != 1 || ranged[0] != "b" {
				t.Errorf("Scan(b, c) = %v, want [b]", ranged)
			}
			if n := st.Unmerged(); n != 3 {
				t.Errorf("Unmerged = %d, want the 3 entries of the two good spool files", n)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			// Nothing of the store stays open or mapped: the media can go.
			fds, _ := os.ReadDir("/proc/self/fd")
			for _, fd := range fds {
				if l, _ := os.Readlink("/proc/self/fd/" + fd.Name()); strings.HasPrefix(l, mnt) {
					t.Errorf("left open: %s", l)
				}
			}
			mapped, _ := os.ReadFile("/proc/self/maps")
			for _, l := range strings.Split(string(mapped), "\n") {
				if strings.Contains(l, mnt) {
					t.Errorf("left mapped: %s", l)
				}
			}
			if errs := log.All(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "empty key") {
				t.Errorf("reported %v, want the refused spool file", errs)
			}
			if after := badgerfmttest.FilesIn(t, dir); !maps.Equal(before, after) {
				t.Errorf("the store changed")
			}
			if after := badgerfmttest.FilesIn(t, spool.Dir(dir)); !maps.Equal(beforeSpool, after) {
				t.Errorf("the spool changed")
			}
			if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "otelrecords-replay-*")); len(after) > len(temps) {
				t.Errorf("temporary directories left: %v", after)
			}
		})
	}
}

// TestReaderOnAFullDisk reads a store with a spool on a file system too
// full for Badger to write safely: the reader cannot merge the spool, so
// it reads it, as on read-only media, rather than fail.
func TestReaderOnAFullDisk(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "160m")
	dir := filepath.Join(mnt, "store")
	closedStore(t, dir, "a", "1")
	if err := spool.Write(dir, []sessions.Entry{{Key: []byte("b"), Value: []byte("2")}}); err != nil {
		t.Fatal(err)
	}
	testsupport.Fill(t, mnt, 16<<20)
	st, err := OpenWait(context.Background(), dir, nil, WithReadOnly(), WithErrorHandler(func(err error) { t.Error(err) }))
	if err != nil {
		t.Fatalf("OpenWait on a full disk: %v", err)
	}
	defer st.Close()
	if got, want := scan(t, st), map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) || st.Unmerged() != 1 {
		t.Fatalf("read %v (%d unmerged), want %v with the spooled entry left for a writer", got, st.Unmerged(), want)
	}
}

// TestReaderOverEmptyLogsOnReadOnlyMedia reads, from a read-only file
// system, a store holding the empty logs a writer killed as it created
// them leaves (TestEmptyLogsAKillLeft), closed cleanly or crashed: the
// reader cannot remove them, so it replays the store without them, reads
// every acknowledged record, and changes nothing.
func TestReaderOverEmptyLogsOnReadOnlyMedia(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "closed cleanly", true: "writer crashed"}[crash], func(t *testing.T) {
			mnt, dir := storeOnTmpfs(t, crash)
			for _, name := range []string{"00050.mem", "000050.vlog"} {
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := badgerfmttest.FilesIn(t, dir)
			testsupport.RemountReadOnly(t, mnt)
			st, err := OpenWait(context.Background(), dir, nil, WithReadOnly(), WithErrorHandler(func(err error) { t.Errorf("badger: %v", err) }))
			if err != nil {
				t.Fatalf("OpenWait on read-only media over empty logs: %v", err)
			}
			if got := scan(t, st); got["k"] != "acknowledged" {
				t.Errorf("read %v, want k=acknowledged among them", got)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if after := badgerfmttest.FilesIn(t, dir); !maps.Equal(before, after) {
				t.Errorf("the store changed")
			}
		})
	}
}

// storeOnTmpfs returns a tmpfs mounted for the test and a store on it
// holding k=acknowledged, closed cleanly or left by a writer that crashed.
func storeOnTmpfs(t *testing.T, crash bool) (mnt, dir string) {
	t.Helper()
	mnt = filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "160m")
	dir = filepath.Join(mnt, "store")
	if crash {
		crashedAt(t, dir)
	} else {
		closedStore(t, dir, "k", "acknowledged")
	}
	return mnt, dir
}
