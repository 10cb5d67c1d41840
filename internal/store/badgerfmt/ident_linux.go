package badgerfmt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// identOf returns what identifies the file fi describes.
func identOf(fi fs.FileInfo) fileIdent {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdent{}
	}
	return fileIdent{
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}
}

// statAt returns the size and identity of the file name in the directory
// d, following a link as os.Stat does. It looks the name up relative to
// d: a check stats every table of a store, and walking the store's path
// again for each cost more than the stat.
func statAt(d *os.File, name string) (int64, fileIdent, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(d.Fd()), name, &st, 0)
	for errors.Is(err, unix.EINTR) {
		err = unix.Fstatat(int(d.Fd()), name, &st, 0)
	}
	if err != nil {
		return 0, fileIdent{}, &fs.PathError{Op: "stat", Path: filepath.Join(d.Name(), name), Err: err}
	}
	return st.Size, fileIdent{
		dev:   st.Dev,
		ino:   st.Ino,
		size:  st.Size,
		mtime: st.Mtim.Nano(),
		ctime: st.Ctim.Nano(),
	}, nil
}
