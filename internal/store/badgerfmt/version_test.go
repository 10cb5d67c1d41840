package badgerfmt

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestBadgerVersionPinned fails when go.mod moves Badger off the version
// this package's readers were written against: they read formats Badger
// does not promise to keep, and a new version must be read for changes
// before the pin moves with it.
func TestBadgerVersionPinned(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", `{{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}`, badgerModule).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m %s: %v\n%s", badgerModule, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != BadgerVersion {
		t.Fatalf(`go.mod now builds with %s %s, but the format readers in internal/store/badgerfmt were written against %s.
They must be re-checked against the new Badger's source before BadgerVersion moves:
  - log.go: the log header (logHeaderSize), the entry header and its CRC, maxKeyLen, the meta bits (value.go, structs.go, memtable.go);
  - vlog.go: the value pointer's layout (valuePointer in structs.go);
  - manifest.go: the KEYREGISTRY of a store without encryption (key_registry.go), the number of levels;
  - check.go: the file names; and that ReplayManifestFile and table.OpenInMemoryTable still behave as the checks expect.
Then set BadgerVersion (version.go) to the new version, and run the tests of badgerstore and cmd/records.`,
			badgerModule, got, BadgerVersion)
	}
}

// TestBadgerIn reads the version of Badger from the build information of
// programs built in the ways Go builds them.
func TestBadgerIn(t *testing.T) {
	dep := func(path, version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: version, Replace: replace}
	}
	for _, tc := range []struct {
		name string
		deps []*debug.Module
		want string
	}{
		{"none", nil, ""},
		{"other modules only", []*debug.Module{dep("golang.org/x/sys", "v0.48.0", nil)}, ""},
		{"required", []*debug.Module{dep("golang.org/x/sys", "v0.48.0", nil), dep(badgerModule, "v4.9.6", nil)}, "v4.9.6"},
		{"newer required by the program", []*debug.Module{dep(badgerModule, "v4.10.0", nil)}, "v4.10.0"},
		{"replaced by another version", []*debug.Module{dep(badgerModule, "v4.9.6", dep(badgerModule, "v4.8.0", nil))}, "v4.8.0"},
		{"replaced by a fork", []*debug.Module{dep(badgerModule, "v4.9.6", dep("example.com/badger", "v4.9.6-fork", nil))}, "=> example.com/badger v4.9.6-fork"},
		{"replaced by a directory", []*debug.Module{dep(badgerModule, "v4.9.6", dep("../badger", "", nil))}, "=> ../badger"},
	} {
		if got := badgerIn(&debug.BuildInfo{Deps: tc.deps}); got != tc.want {
			t.Errorf("%s: badgerIn = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// linking makes the program seem to link version v of Badger until the
// test ends.
func linking(t *testing.T, v string) {
	old := linkedBadger
	linkedBadger = func() string { return v }
	t.Cleanup(func() { linkedBadger = old })
}

// TestOtherBadgerVersion checks what the readers do in a program that
// links another Badger: CheckAll and Salvage refuse, saying why, and
// CheckForOpen still reports damage, saying it may be a misreading.
func TestOtherBadgerVersion(t *testing.T) {
	for _, v := range []string{"", BadgerVersion} {
		linking(t, v)
		if err := CheckVersion(); err != nil {
			t.Errorf("linking %q: CheckVersion = %v", v, err)
		}
	}

	linking(t, "v4.10.0")
	dir := t.TempDir()
	// A table without a MANIFEST: damage that needs no table to read.
	if err := os.WriteFile(filepath.Join(dir, "000001"+TableFileExt), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	says := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), BadgerVersion) || !strings.Contains(err.Error(), "v4.10.0") {
			t.Errorf("%s with another Badger linked = %v, want an error naming both versions", what, err)
		}
	}
	says("CheckVersion", CheckVersion())
	found, err := CheckAll(dir)
	if found != nil {
		t.Errorf("CheckAll read the store: %v", found)
	}
	says("CheckAll", err)
	s, err := Salvage(dir, func(k []byte) string { return string(k) })
	if s != nil {
		t.Errorf("Salvage read the store: %+v", s)
	}
	says("Salvage", err)

	found, err = CheckForOpen(dir)
	if err != nil || len(found) != 1 {
		t.Fatalf("CheckForOpen = %v, %v; want the missing MANIFEST", found, err)
	}
	if p := found[0].Problem; !strings.Contains(p, "v4.10.0") || !strings.Contains(p, "misreading") {
		t.Errorf("CheckForOpen's problem %q does not say it may be a misreading", p)
	}
}
