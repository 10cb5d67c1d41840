//go:build unix

package badgerstore

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwned returns an error matching ErrNotStoreDir when another user
// could replace what dir holds: dir is writable by everyone without the
// sticky bit (anyone may rename the store away and put theirs in its
// place), or is owned by another user (not root) — when the store is to
// be created in it (creating) or dir is the store itself.
func checkOwned(dir string, fi fs.FileInfo, creating bool) error {
	m := fi.Mode()
	if m.Perm()&0o002 != 0 && m&fs.ModeSticky == 0 {
		return &placeError{dir, fmt.Sprintf("is writable by every user and has no sticky bit (mode %o): another user could replace the store; use a directory of your own, or set the sticky bit (chmod +t)", m.Perm())}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid && st.Uid != 0 && creating {
		return &placeError{dir, fmt.Sprintf("is owned by another user (uid %d, you are %d), who could replace the store; use a directory of your own", st.Uid, uid)}
	}
	return nil
}
