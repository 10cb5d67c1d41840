package badgerfmt

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
)

// Tables (.sst files) are read with Badger's own table code, which knows
// their layout (blocks, then an index, its checksum and their lengths);
// what is ours is how a table is opened so that a damaged one cannot
// harm the process, and which of its blocks are read.

// checkTable opens a table with Badger's table code, as Badger's Open
// does (its index, with the index's checksum, and its last block), and,
// when full is set, reads and checksums every block. The table is mapped
// in a (see arena) when a is not nil.
func checkTable(a *arena, t tableJob, full bool) *Damage {
	problem := "cannot be read"
	err := withMappedIn(a, t.path(), func(_ *os.File, data []byte) error {
		if len(data) == 0 {
			problem = "empty"
			return errors.New("no bytes")
		}
		problem = "its index or last block does not read"
		tbl, err := openTable(data, t.id, t.compression)
		if err != nil || !full {
			return err
		}
		problem = "a data block does not read"
		return eachBlock(tbl, nil)
	})
	if err != nil {
		return damaged(t.path(), problem, err)
	}
	return nil
}

// openTable opens a table held in data (a read-only map of its file) with
// Badger's table code, under guard. The table is opened as Badger opens
// it, but as an in-memory table: one without a file of its own, so that
// closing it never unmaps or deletes anything; the caller owns data.
// Blocks are checksummed as they are read.
func openTable(data []byte, id uint64, c options.CompressionType) (*table.Table, error) {
	opts := &table.Options{
		BlockSize:   badger.DefaultOptions("").BlockSize,
		Compression: c,
		ChkMode:     options.OnBlockRead,
	}
	var t *table.Table
	err := guard(func() (err error) {
		t, err = table.OpenInMemoryTable(data, id, opts)
		return err
	})
	return t, err
}

// eachBlock reads every block of t, in order, checksums included, and
// calls fn (when not nil) with the index of each block and an iterator
// positioned at its first entry. It returns an error for the first block
// that does not read. Called from openTable's caller, under withMapped.
func eachBlock(t *table.Table, fn func(i int, it *table.Iterator, next []byte) error) error {
	return guard(func() error {
		// KeySplits with a huge n returns the first key of every block.
		bases := t.KeySplits(math.MaxInt32, nil)
		it := t.NewIterator(table.NOCACHE)
		defer it.Close()
		for i, base := range bases {
			key := []byte(base)
			it.Seek(key)
			if !it.Valid() || !bytes.Equal(it.Key(), key) {
				return fmt.Errorf("block %d of %d", i+1, len(bases))
			}
			if fn != nil {
				var next []byte
				if i+1 < len(bases) {
					next = []byte(bases[i+1])
				}
				if err := fn(i, it, next); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// salvageTable hands every entry of the table at path that reads to add,
// block by block, and notes in s what does not read. Without a known
// compression (guess set) it tries each of Badger's.
func salvageTable(path string, id uint64, c options.CompressionType, guess bool, add func([]byte, keyVersion), s *Salvaged) {
	name := filepath.Base(path)
	err := withMapped(path, func(_ *os.File, data []byte) error {
		if len(data) == 0 {
			return errors.New("empty")
		}
		tbl, err := openTable(data, id, c)
		if guess {
			for _, other := range []options.CompressionType{options.Snappy, options.None, options.ZSTD} {
				if err == nil {
					break
				}
				tbl, err = openTable(data, id, other)
			}
		}
		if err != nil {
			return err
		}
		read, bad := 0, []int{}
		err = guard(func() error {
			bases := tbl.KeySplits(math.MaxInt32, nil)
			it := tbl.NewIterator(table.NOCACHE)
			defer it.Close()
			for i, base := range bases {
				it.Seek([]byte(base))
				if !it.Valid() || !bytes.Equal(it.Key(), []byte(base)) {
					bad = append(bad, i+1)
					continue
				}
				for ; it.Valid(); it.Next() {
					if i+1 < len(bases) && y.CompareKeys(it.Key(), []byte(bases[i+1])) >= 0 {
						break
					}
					vs := it.Value()
					add(it.Key(), keyVersion{meta: vs.Meta, value: vs.Value, expires: vs.ExpiresAt})
					read++
				}
			}
			return nil
		})
		if len(bad) > 0 || err != nil {
			lost := max(int(tbl.KeyCount())-read, 0)
			s.LostEntries += lost
			what := fmt.Sprintf("%d of %d blocks of %s (%d entries)", len(bad), len(tbl.KeySplits(math.MaxInt32, nil)), name, lost)
			if err != nil {
				what += ": " + err.Error()
			}
			s.Lost = append(s.Lost, what)
		}
		return nil
	})
	if err != nil {
		s.Lost = append(s.Lost, fmt.Sprintf("all of %s (its index does not read: %v)", name, err))
	}
}
