package badgerfmt

import (
	"errors"
	"runtime/debug"
	"sync"
)

// BadgerVersion is the version of Badger whose file formats this package
// was written against and tested on. Badger uses its own code where it
// exports it (the MANIFEST's replay, the table reader), but the log
// format, the KEYREGISTRY's size, the meta bits of an entry and the value
// pointer's layout are written here from Badger's source; a new Badger
// may change any of them without a word, and readers that misread a
// healthy store would call it damaged, or recover less of it than there
// is. So the version is pinned: a test fails when go.mod names another,
// and at run time CheckVersion says so.
const BadgerVersion = "v4.9.6"

// badgerModule is Badger's module path.
const badgerModule = "github.com/dgraph-io/badger/v4"

// linkedBadger returns the version of Badger the program links, as its
// build information names it, or "" when the program carries none (a test
// binary has no dependencies in its build information). Tests set it.
var linkedBadger = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return badgerIn(info)
})

// badgerIn returns the version of Badger info names: its version, or what
// replaced it ("=> path" or "=> path version"), or "" when info does not
// name Badger.
func badgerIn(info *debug.BuildInfo) string {
	for _, d := range info.Deps {
		if d.Path != badgerModule {
			continue
		}
		switch r := d.Replace; {
		case r == nil:
			return d.Version
		case r.Path == badgerModule:
			return r.Version // another version of Badger itself
		case r.Version == "":
			return "=> " + r.Path // a directory: anything may be in it
		default:
			return "=> " + r.Path + " " + r.Version
		}
	}
	return ""
}

// versionMismatch says, for people, that the program links a Badger other
// than BadgerVersion, or returns "" when it links that one or cannot tell.
func versionMismatch() string {
	v := linkedBadger()
	if v == "" || v == BadgerVersion {
		return ""
	}
	return "the file readers of otelrecords were written for Badger " + BadgerVersion + ", and this program links " + badgerModule + " " + v
}

// CheckVersion returns an error when the program links a version of
// Badger other than BadgerVersion (a program may require a newer Badger
// than otelrecords does, and Go builds it with the newest one required),
// and nil when it links that one or cannot tell. CheckAll and Salvage
// refuse to read a store then: what they would report may be a misreading.
func CheckVersion() error {
	if m := versionMismatch(); m != "" {
		return errors.New("otelrecords: " + m + ": they must be checked against it before they read a store (internal/store/badgerfmt)")
	}
	return nil
}
