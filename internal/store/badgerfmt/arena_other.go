//go:build windows || plan9 || js || wasip1 || aix

package badgerfmt

import "os"

// An arena is not kept where address space cannot be reserved: each file
// is mapped and unmapped on its own.
type arena struct{}

func newArena(int64) *arena { return nil }

func (*arena) mapFile(*os.File, int64) ([]byte, bool) { return nil, false }

func (*arena) release() {}
