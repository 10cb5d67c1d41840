package badgerfmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dgraph-io/ristretto/v2/z"
)

// The value log (.vlog files) holds the values too large to sit beside
// their keys (128 KiB or more in a store of badgerstore's). A table or
// memtable entry then holds a value pointer in place of its value, and
// the value is an entry of the value log, in the log format of log.go.

// valuePointerSize is the size of Badger's valuePointer: file id, length
// and offset, as 32-bit integers in the machine's byte order.
const valuePointerSize = 12

// valueLogs reads values through Badger's value pointers.
type valueLogs struct {
	files map[uint32][]byte
	close func()
}

// openValueLogs maps every .vlog file, for reads until close.
func openValueLogs(paths []string) *valueLogs {
	v := &valueLogs{files: map[uint32][]byte{}}
	var closers []func()
	for _, path := range paths {
		id, ok := ParseFileID(filepath.Base(path), ValueLogFileExt)
		if !ok || id > 1<<32-1 {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil || fi.Size() == 0 {
			f.Close()
			continue
		}
		// A map outlives the descriptor it was made from.
		data, err := z.Mmap(f, false, fi.Size())
		f.Close()
		if err != nil {
			continue
		}
		v.files[uint32(id)] = data
		closers = append(closers, func() { _ = z.Munmap(data) })
	}
	v.close = func() {
		for _, c := range closers {
			c()
		}
	}
	return v
}

// read returns the value a pointer leads to, checking that the entry
// there is intact and is key's.
func (v *valueLogs) read(key, ptr []byte) (value []byte, err error) {
	if len(ptr) != valuePointerSize {
		return nil, fmt.Errorf("a value pointer of %d bytes", len(ptr))
	}
	fid := binary.NativeEndian.Uint32(ptr[0:])
	n := binary.NativeEndian.Uint32(ptr[4:])
	off := binary.NativeEndian.Uint32(ptr[8:])
	data, ok := v.files[fid]
	name := fmt.Sprintf("%06d%s", fid, ValueLogFileExt)
	switch {
	case !ok:
		return nil, fmt.Errorf("%s is missing", name)
	case uint64(off)+uint64(n) > uint64(len(data)):
		return nil, fmt.Errorf("%s ends before byte %d", name, uint64(off)+uint64(n))
	}
	err = guard(func() error {
		e, err := decodeLogEntry(data[off : off+n])
		if err != nil {
			return fmt.Errorf("the entry at byte %d of %s does not read", off, name)
		}
		if !bytes.Equal(e.key, key) {
			return fmt.Errorf("the entry at byte %d of %s is another key's", off, name)
		}
		value = bytes.Clone(e.value)
		return nil
	})
	return value, err
}
