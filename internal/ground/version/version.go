// Package version tells which version of otelrecords a program runs: what
// a session row records as its writer, and what the records command prints.
package version

import (
	"runtime/debug"
	"sync"
)

// Path is this library's module path.
const Path = "github.com/otelrecords/otelrecords"

// Devel is the version of the library built from a source tree rather
// than a published version: the module itself, or a clone a program's
// go.mod replaces it with.
const Devel = "(devel)"

// Module returns this library's module version, as debug.ReadBuildInfo
// reports it: "(devel)" in a build of the module itself, the tagged version
// in a program that depends on it, "unknown" without build information.
// A program whose go.mod replaces the module with a directory (a clone,
// as the README says to depend on it before it is published) builds it
// from that tree: "(devel)" too, not the placeholder version go mod tidy
// requires (v0.0.0-00010101000000-000000000000); replaced with another
// module's version, that version.
func Module() string { return once() }

var once = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return fromBuildInfo(bi)
})

// fromBuildInfo returns the library's version as a build's information
// tells it.
func fromBuildInfo(bi *debug.BuildInfo) string {
	if bi.Main.Path == Path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path != Path {
			continue
		}
		if r := d.Replace; r != nil {
			if r.Version == "" {
				return Devel // a directory
			}
			return r.Version
		}
		return d.Version
	}
	return "unknown"
}
