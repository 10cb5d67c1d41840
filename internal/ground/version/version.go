// Package version tells which version of otelrecords a program runs: what
// a session row records as its writer, and what the records command prints.
package version

import (
	"runtime/debug"
	"sync"
)

// Path is this library's module path.
const Path = "github.com/otelrecords/otelrecords"

// Module returns this library's module version, as debug.ReadBuildInfo
// reports it: "(devel)" in a build of the module itself, the tagged version
// in a program that depends on it, "unknown" without build information.
func Module() string { return once() }

var once = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if bi.Main.Path == Path {
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == Path {
			return d.Version
		}
	}
	return "unknown"
})
