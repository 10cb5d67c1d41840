//go:build unix

package storedir

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwned returns an error matching ErrNotStoreDir when another user
// could replace what dir holds, or add to it: dir is writable by everyone
// — without the sticky bit, anyone may rename the store away and put
// theirs in its place; with it (a shared /tmp), anyone may still put
// files in a store that is dir itself (role storeDir; fix names the
// subdirectory to use instead) — or dir is owned by another user (not
// root) and the store is to be created (creating).
func checkOwned(dir string, fi fs.FileInfo, role dirRole, creating bool, fix string) error {
	m := fi.Mode()
	switch {
	case m.Perm()&0o002 != 0 && m&fs.ModeSticky == 0:
		return &placeError{dir, fmt.Sprintf("is writable by every user and has no sticky bit (mode %o): another user could replace the store; use a directory of your own, or set the sticky bit (chmod +t)", m.Perm())}
	case m.Perm()&0o002 != 0 && role == storeDir:
		return &placeError{dir, fmt.Sprintf("is writable by every user (mode %o): another user could put files in the store; a store is a directory of its own; use a subdirectory, e.g. %s", m.Perm()|0o1000, fix)}
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
