package proctest

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// TestDiskFilledByAnotherProcess runs a writer ending changed spans with 1
// KiB attributes through exporter.New, up to 5,000 a second, on a 256 MiB
// tmpfs, while another process (dd) fills the tmpfs to 0 bytes free at
// random moments, holds it full for 0.5 to 2 s (one fill 4 s), and
// removes its file: OTELRECORDS_TEST_FILLS times (10 by default).
// Badger's flushes, compactions and closes meet the full disk at every
// point of the writer's work. The writer must not crash (before
// badgerstore's guard, a fill killed it with SIGBUS in Badger's
// table.CreateTable, in every run); the spans the disk could not take
// are set aside in the spool, or dropped, counted (Stats().Unwritable)
// and reported; every span is accounted for; and once the space is back
// for good, writing resumes: every span ended after the last fill is in
// the store.
func TestDiskFilledByAnotherProcess(t *testing.T) {
	fills := testsupport.Fills(t, 10)
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "256m")
	dir := filepath.Join(mnt, "store")
	run := time.Duration(fills)*3*time.Second + 5*time.Second
	w := startFault(t, "-dir", dir, "-label", "filled", "-duration", run.String(), "-rate", "5000", "-attr", "1024")

	for i := range fills {
		time.Sleep(time.Duration(200+rand.IntN(600)) * time.Millisecond)
		select {
		case <-w.exited:
			t.Fatalf("the writer exited after %d fills; stderr %q", i, w.errors())
		default:
		}
		filler := testsupport.FillFromOutside(t, mnt)
		hold := time.Duration(500+rand.IntN(1500)) * time.Millisecond
		if i == fills/2 {
			// Long enough for 8 MiB of records to wait: they go to the
			// spool if it finds room (the store's reserve, given back
			// when the store let go), else are dropped and counted.
			hold = 4 * time.Second
		}
		time.Sleep(hold)
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	atFree := w.stats()
	done := w.wait(t, run+2*time.Minute)
	errs := w.errors()
	t.Logf("%d fills to 0 bytes free: made %d, written %d, spooled %d, dropped as unwritable %d, write errors %d; at the last free: made %d, written %d",
		fills, done.Made, done.Written, done.Spooled, done.Unwritable, done.WriteErrors, atFree.Made, atFree.Written)
	for _, e := range errs {
		t.Logf("stderr: %.300s", e)
	}
	if n := count(errs, "SIGBUS") + count(errs, "fatal error"); n != 0 {
		t.Fatalf("the writer crashed")
	}
	if done.WriteErrors == 0 || done.SpooledUnwritable+done.Unwritable == 0 {
		t.Errorf("done %+v: want writes refused while the disk was full, and, in the fill held 4 s, records set aside in the spool or dropped", done)
	}
	if reported := count(errs, "dropped the") > 0; reported != (done.Unwritable > 0) {
		t.Errorf("%d records dropped as unwritable, reported: %v; want drops reported, and only drops", done.Unwritable, reported)
	}
	if got := done.Written + done.Spooled + done.Unwritable; got != done.Made || done.Dropped != 0 || done.Pending != 0 {
		t.Errorf("done %+v: written+spooled+unwritable = %d, want all %d spans made, none left", done, got, done.Made)
	}
	after := 0
	for _, i := range readWork(t, dir)["filled"] {
		if i >= atFree.Made {
			after++
		}
	}
	if want := done.Made - atFree.Made; want == 0 || int64(after) != want {
		t.Errorf("%d records of the %d spans ended after the last fill are in the store; want them all, and some", after, want)
	}
}
