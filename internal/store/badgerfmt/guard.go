package badgerfmt

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strings"

	"github.com/dgraph-io/ristretto/v2/z"
)

// withMapped maps the file at path read-only (or reads it, when it is at
// most readNotMap bytes) and calls fn, under guard, with the open file and
// its bytes. The map is released when fn returns, so fn must not keep
// them.
func withMapped(path string, fn func(f *os.File, data []byte) error) error {
	return withMappedIn(nil, path, fn)
}

// withMappedIn is withMapped with the map made in a when a is not nil and
// has room: it is then released with a, not when fn returns, though fn
// must not keep the bytes either.
func withMappedIn(a *arena, path string, fn func(f *os.File, data []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return fn(f, nil)
	}
	if fi.Size() > math.MaxInt32*2 {
		return fmt.Errorf("%d bytes, larger than any file Badger writes", fi.Size())
	}
	if fi.Size() <= readNotMap {
		data := make([]byte, fi.Size())
		n, err := f.ReadAt(data, 0)
		if err != nil && !errors.Is(err, io.EOF) { // EOF: it shrank since; what is left is read
			return err
		}
		return guard(func() error { return fn(f, data[:n]) })
	}
	if data, ok := a.mapFile(f, fi.Size()); ok {
		return guard(func() error { return fn(f, data) })
	}
	data, err := z.Mmap(f, false, fi.Size())
	if err != nil {
		return err
	}
	defer func() { _ = z.Munmap(data) }()
	return guard(func() error { return fn(f, data) })
}

// readNotMap is the largest file withMappedIn reads rather than maps: a
// map and its unmap (which interrupts every core the process ran on)
// cost more than reading a few pages, and every open checks a store's
// logs, which a cleanly closed store leaves nearly empty.
const readNotMap = 64 << 10

// guard runs fn, turning a panic into an error, and a memory fault (a
// mapped file shrinking under us) into a panic first, so that reading a
// damaged file never ends the process.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if strings.Contains(msg, "Recovering from initIndex crash") {
				// Badger's table reader re-panics with a dump in place of
				// the cause: a footer or index pointing outside the file.
				err = errors.New("the table reader panicked: its footer or index points outside the file")
				return
			}
			err = fmt.Errorf("reading it panicked: %s", firstLine(msg))
		}
	}()
	return fn()
}

// firstLine cuts Badger's multi-line panic reports (a table's debug dump)
// to their first non-empty line.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "==") {
			return line
		}
	}
	return strings.TrimSpace(s)
}
