//go:build !linux

package space

import (
	"io/fs"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/sessions"
)

// Check checks nothing where free space is not asked of the file
// system: a full disk may then crash the process (see space.go).
func Check(dir string) error { return nil }

// Guard holds nothing and checks nothing where free space is not asked of
// the file system and blocks are not allocated ahead (see space.go).
type Guard struct {
	rotated atomic.Bool
	hooks   [numHooks]atomic.Int64
}

func NewGuard(dir string, sizes Sizes) *Guard              { return &Guard{} }
func (g *Guard) count(hook int)                            { g.hooks[hook].Add(1) }
func (g *Guard) Take(entries []fs.DirEntry) error          { return nil }
func (g *Guard) Close()                                    {}
func (g *Guard) CheckWrite(entries []sessions.Entry) error { return nil }
func (g *Guard) ReleasedSince(n int64) bool                { return false }
func (g *Guard) Released() int64                           { return 0 }
func (g *Guard) Refuse(n int) error                        { return nil }
func (g *Guard) beforeWrites()                             {}
func (g *Guard) beforeFlush()                              {}
func (g *Guard) BeforeClose()                              {}
func (g *Guard) beforeTable(keys uint64)                   {}
func (g *Guard) Watch(tables func() []badger.TableInfo)    {}
