package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/store/spool"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestDoctorRecoversWholeTables damages the MANIFEST of the test store (cut
// short, which would make Badger delete every table): the readers refuse
// the store, naming the file; the doctor moves it aside and recovers every
// record and session row, and the readers print the same as before.
func TestDoctorRecoversWholeTables(t *testing.T) {
	dir := writeStore(t)
	sessionsBefore := mustRun(t, "--dir", dir, "sessions", "--json")
	dumpBefore := mustRun(t, "--dir", dir, "dump", "--json")
	manifest := filepath.Join(dir, "MANIFEST")
	if err := os.Truncate(manifest, 12); err != nil {
		t.Fatal(err)
	}

	code, _, errOut := runCLI(t, "--dir", dir, "sessions")
	if code != exitError || !strings.Contains(errOut, manifest) || !strings.Contains(errOut, "records doctor") {
		t.Fatalf("records sessions on a damaged store: exit %d, stderr %q; want 1 and the damaged file named", code, errOut)
	}
	code, out, _ := runCLI(t, "--dir", dir, "doctor", "--check")
	if code != exitError || !strings.Contains(out, manifest) {
		t.Fatalf("records doctor --check: exit %d, stdout %q", code, out)
	}

	out = mustRun(t, "--dir", dir, "doctor")
	t.Logf("records doctor:\n%s", out)
	for _, want := range []string{"Damaged:", "MANIFEST", "Moved the damaged store to " + dir + ".damaged-", "sessions", "2 session rows",
		"tallies      2 tallies of what kept sessions let go", "Nothing was lost."} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q", want)
		}
	}
	// The tallies are the store's own, not keys otelrecords does not know.
	if strings.Contains(out, "does not know") {
		t.Errorf("doctor's report calls some of the store's entries unknown")
	}
	if got := mustRun(t, "--dir", dir, "sessions", "--json"); got != sessionsBefore {
		t.Errorf("sessions after the doctor:\n%s\nbefore:\n%s", got, sessionsBefore)
	}
	if got := mustRun(t, "--dir", dir, "dump", "--json"); got != dumpBefore {
		t.Errorf("dump after the doctor:\n%s\nbefore:\n%s", got, dumpBefore)
	}
	asides, _ := filepath.Glob(dir + ".damaged-*")
	if len(asides) != 1 {
		t.Fatalf("damaged stores aside: %v, want one", asides)
	}
	if b, err := os.ReadFile(filepath.Join(asides[0], "MANIFEST")); err != nil || len(b) != 12 {
		t.Errorf("the damaged store was changed: MANIFEST %d bytes, %v", len(b), err)
	}
	if out := mustRun(t, "--dir", dir, "doctor"); !strings.Contains(out, "healthy") {
		t.Errorf("doctor of the recovered store: %q, want healthy", out)
	}
}

// TestDoctorReportsLoss damages the index of the table holding the second
// session: the doctor keeps the first session and says what it lost.
func TestDoctorReportsLoss(t *testing.T) {
	dir := writeStore(t)
	table := filepath.Join(dir, "000002.sst")
	fi, err := os.Stat(table)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(table, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "--dir", dir, "doctor")
	t.Logf("records doctor:\n%s", out)
	for _, want := range []string{"000002.sst", "1 session row\n", "lost", "all of 000002.sst"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q", want)
		}
	}
	got := decodeLines(t, mustRun(t, "--dir", dir, "sessions", "--json"))
	if len(got) != 1 || got[0]["id"] != id1.String() {
		t.Errorf("sessions after the doctor: %v, want session %d only", got, id1)
	}
}

// TestDoctorMissingAndHealthy checks the doctor on no directory, on an
// empty one, and on a healthy store.
func TestDoctorMissingAndHealthy(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing")
	if code, _, errOut := runCLI(t, "--dir", missing, "doctor"); code != exitError || !strings.Contains(errOut, "no store at") {
		t.Errorf("doctor of no store: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("doctor created %s", missing)
	}
	empty := t.TempDir()
	for _, args := range [][]string{{"doctor"}, {"doctor", "--check"}} {
		if code, _, errOut := runCLI(t, append([]string{"--dir", empty}, args...)...); code != exitError || !strings.Contains(errOut, "no store at") {
			t.Errorf("%v of an empty directory: exit %d, %q", args, code, errOut)
		}
	}
	dir := writeStore(t)
	if out := mustRun(t, "--dir", dir, "doctor", "--check"); !strings.Contains(out, "healthy") {
		t.Errorf("doctor --check of a healthy store: %q", out)
	}
	if out := mustRun(t, "--dir", dir, "doctor"); !strings.Contains(out, "nothing to do") {
		t.Errorf("doctor of a healthy store: %q", out)
	}
}

// TestDoctorFinishesAnInterruptedRun leaves a store as a doctor killed
// between its two renames leaves it — the damaged store aside, the
// recovered one beside it, nothing at the directory, the journal naming
// both (docs/FORMAT.md §9) — and checks that every command says where the
// records are, and that the doctor finishes the run.
func TestDoctorFinishesAnInterruptedRun(t *testing.T) {
	dir := writeStore(t)
	sessionsBefore := mustRun(t, "--dir", dir, "sessions", "--json")
	recovered := dir + ".doctor-new"
	if out, err := exec.Command("cp", "-a", dir, recovered).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 12); err != nil {
		t.Fatal(err)
	}
	aside := dir + ".damaged-20260101T000000Z"
	if err := os.Rename(dir, aside); err != nil {
		t.Fatal(err)
	}
	journal := "otelrecords doctor journal, version 1\n" +
		"aside: " + filepath.Base(aside) + "\n" +
		"new: " + filepath.Base(recovered) + "\n"
	if err := os.WriteFile(dir+".doctor", []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"sessions"}, {"dump"}, {"doctor", "--check"}} {
		code, _, errOut := runCLI(t, append([]string{"--dir", dir}, args...)...)
		if code != exitError || !strings.Contains(errOut, aside) || !strings.Contains(errOut, recovered) ||
			!strings.Contains(errOut, "records doctor --dir "+dir) {
			t.Errorf("records %v mid-doctor: exit %d, stderr %q; want where the records are, and the way to finish", args, code, errOut)
		}
	}
	out := mustRun(t, "--dir", dir, "doctor")
	t.Logf("records doctor:\n%s", out)
	for _, want := range []string{"Finished a doctor run on " + dir, aside, "2 session rows"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q", want)
		}
	}
	if got := mustRun(t, "--dir", dir, "sessions", "--json"); got != sessionsBefore {
		t.Errorf("sessions after the doctor:\n%s\nbefore:\n%s", got, sessionsBefore)
	}
	if left, _ := filepath.Glob(dir + ".doctor*"); len(left) != 0 {
		t.Errorf("left over: %v", left)
	}
}

// TestDoctorNamesTheDirectoryItChecked: a store an earlier writer put in
// the child otelrecords of a directory of other files is the store the
// doctor checks, and names (issue 33: it named the directory given).
func TestDoctorNamesTheDirectoryItChecked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "build")
	store := filepath.Join(dir, "otelrecords")
	record(t, store, goldenStart1, "build", nil, func(rec *testsupport.Session) {
		rec.Put("compile", sessions.Changed, rec.Stamp(goldenStart1), sessions.Record{Name: "compile"})
	})
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"doctor", "--check"}, {"doctor"}} {
		out := mustRun(t, append([]string{"--dir", dir}, args...)...)
		if want := "The store at " + store + " is healthy"; !strings.Contains(out, want) {
			t.Errorf("records --dir %s %s: %q, want %q", dir, strings.Join(args, " "), out, want)
		}
	}
}

// A store with a second store in its otelrecords/ child (left by a
// writer of an earlier version that raced another for a new directory)
// is named by the doctor, with how to read the two as one.
func TestDoctorNamesASecondStoreInside(t *testing.T) {
	dir := writeStore(t)
	child := filepath.Join(dir, badgerstore.LegacyChild)
	if err := os.Mkdir(child, 0o700); err != nil {
		t.Fatal(err)
	}
	buildOnRunner(t, child, "raced")
	out := mustRun(t, "--dir", dir, "doctor", "--check")
	for _, want := range []string{"healthy", "Note: " + child + " holds a second store", "records --dir " + dir + " --dir " + child + " sessions"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor --check said %q; want %q in it", out, want)
		}
	}
	both := mustRun(t, "--dir", dir, "--dir", child, "sessions")
	if !strings.Contains(both, "raced") || !strings.Contains(both, "qwen3") {
		t.Errorf("the two stores read as one:\n%s\nwant the raced session beside the store's own", both)
	}
	if out := mustRun(t, "--dir", writeStore(t), "doctor", "--check"); strings.Contains(out, "second store") {
		t.Errorf("doctor --check on a store without one inside: %q", out)
	}
}

// A spool an earlier writer left in the directory it was given, beside
// the store it put in the directory's otelrecords/ child, is named by the
// doctor with how to move it in; moved, the next open merges it.
func TestDoctorNamesAStrandedSpool(t *testing.T) {
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "notes.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(parent, badgerstore.LegacyChild)
	buildOnRunner(t, child, "kept") // where an earlier version put the store
	// What an earlier writer set aside in parent: another session's
	// entries, spooled there.
	src := filepath.Join(t.TempDir(), "src")
	buildOnRunner(t, src, "stranded")
	st, err := badgerstore.Open(src, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	var es []sessions.Entry
	for e, err := range st.Scan(nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, sessions.Entry{Key: slices.Clone(e.Key), Value: slices.Clone(e.Value)})
	}
	st.Close()
	if err := spool.Write(parent, es); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, "--dir", parent, "doctor", "--check")
	mv := "mv " + filepath.Join(parent, "spool") + " " + filepath.Join(child, "spool")
	if !strings.Contains(out, "Note: "+filepath.Join(parent, "spool")+" may hold records") || !strings.Contains(out, mv) {
		t.Fatalf("doctor --check said %q; want the stranded spool named, and %q", out, mv)
	}
	if err := os.Rename(filepath.Join(parent, "spool"), filepath.Join(child, "spool")); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "--dir", parent, "sessions"); !strings.Contains(got, "stranded") || !strings.Contains(got, "kept") {
		t.Errorf("sessions once the spool was moved in:\n%s\nwant both", got)
	}
	if out := mustRun(t, "--dir", parent, "doctor", "--check"); strings.Contains(out, "may hold records") {
		t.Errorf("doctor --check once the spool was moved in: %q", out)
	}
}

// A store an earlier version put in the otelrecords/ child of a
// directory of the user's files is used there (by readers and writers
// given the directory), and the doctor says how to give it a directory of
// its own; done as it says, the store is read where it went.
func TestDoctorSaysHowToMoveALegacyStore(t *testing.T) {
	parent := t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "notes.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(parent, badgerstore.LegacyChild)
	buildOnRunner(t, child, "old")  // where an earlier version put the store
	buildOnRunner(t, parent, "new") // a writer given the directory: the same store
	if got := mustRun(t, "--dir", parent, "sessions"); !strings.Contains(got, "old") || !strings.Contains(got, "new") {
		t.Fatalf("sessions of %s:\n%s\nwant both, from the store in %s", parent, got, child)
	}
	out := mustRun(t, "--dir", parent, "doctor", "--check")
	to := filepath.Join(parent, "records")
	mv := "mv " + child + " " + to
	for _, want := range []string{"The store at " + child + " is healthy", "Note: the store is in " + child, "name " + child + " itself", mv} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor --check said %q; want %q in it", out, want)
		}
	}
	if err := os.Rename(child, to); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(t, "--dir", to, "sessions"); !strings.Contains(got, "old") || !strings.Contains(got, "new") {
		t.Errorf("sessions once moved to %s:\n%s\nwant both", to, got)
	}
	if out := mustRun(t, "--dir", to, "doctor", "--check"); strings.Contains(out, "Note:") {
		t.Errorf("doctor --check once moved: %q", out)
	}
	if out := mustRun(t, "--dir", writeStore(t), "doctor", "--check"); strings.Contains(out, "Note:") {
		t.Errorf("doctor --check on a store of its own: %q", out)
	}
}
