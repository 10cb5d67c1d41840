package space

import (
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestTableNeedCoversLevelZeroIntoItself: a compaction of level 0 into
// itself writes one table of all it merges, and the guard waits for room
// for all of it; a compaction between levels, of few keys, for
// compactTableMax.
func TestTableNeedCoversLevelZeroIntoItself(t *testing.T) {
	g := NewGuard(t.TempDir(), Sizes{})
	if got := g.tableNeed(1000); got != compactTableMax {
		t.Errorf("before Badger's tables are known: %d, want %d", got, compactTableMax)
	}
	var level0 []badger.TableInfo
	for i := range 30 { // 30 level-0 tables of 1 MiB, 1,000 keys each
		level0 = append(level0, badger.TableInfo{ID: uint64(i), Level: 0, KeyCount: 1000, OnDiskSize: 1 << 20})
	}
	all := append(level0, badger.TableInfo{ID: 99, Level: 1, KeyCount: 10, OnDiskSize: 100 << 20})
	g.Watch(func() []badger.TableInfo { return all })
	if got := g.tableNeed(30 * 1000); got < 30<<20 {
		t.Errorf("level 0 into itself, 30,000 keys of 30 MiB: need %d, want at least 30 MiB", got)
	}
	if got := g.tableNeed(30 * 1000); got > 31<<20 {
		t.Errorf("level 0 into itself: need %d, want no more than level 0 holds", got)
	}
	if got := g.tableNeed(500); got != compactTableMax {
		t.Errorf("a table of 500 keys between levels: need %d, want %d", got, compactTableMax)
	}
}
