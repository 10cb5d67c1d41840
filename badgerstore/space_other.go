//go:build !linux

package badgerstore

import (
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/sessions"
)

// checkSpace checks nothing where free space is not asked of the file
// system: a full disk may then crash the process (see space.go).
func checkSpace(dir string) error { return nil }

// guard holds nothing and checks nothing where free space is not asked of
// the file system and blocks are not allocated ahead (see space.go).
type guard struct {
	rotated atomic.Bool
	hooks   [numHooks]atomic.Int64
}

func newGuard(dir string) *guard                           { return &guard{} }
func (g *guard) count(hook int)                            { g.hooks[hook].Add(1) }
func (g *guard) take() error                               { return nil }
func (g *guard) close()                                    {}
func (g *guard) checkWrite(entries []sessions.Entry) error { return nil }
func (g *guard) releasedSince(n int64) bool                { return false }
func (g *guard) released() int64                           { return 0 }
func (g *guard) refuse(n int) error                        { return nil }
func (g *guard) beforeWrites()                             {}
func (g *guard) beforeFlush()                              {}
func (g *guard) beforeClose()                              {}
func (g *guard) beforeTable(keys uint64)                   {}
func (g *guard) watch(tables func() []badger.TableInfo)    {}
