package badgerstore

import (
	"github.com/otelrecords/otelrecords/internal/store/storedir"
)

// Where a store lives (docs/FORMAT.md, "Where a store lives").
//
// One rule: the directory a user names is the store. It is created, mode
// 0700, when it does not exist; an existing directory is used only if
// everything in it is a store's own (Badger's files, otelrecords.* files,
// the spool) or nothing is (an empty directory, or a volume holding only
// its file system's lost+found, is a store to be); anything else is
// refused, naming the fix: a directory of its own inside it. Package
// internal/store/storedir applies the rule; these are its names for
// users.

// LegacyChild is the child directory in which versions of otelrecords
// before the one rule put a store when the directory named held other
// files. A store found there, in a directory holding no store of its own,
// is read and written where it is; no store is created there any more.
const LegacyChild = storedir.LegacyChild

// ErrNotStoreDir is matched by the error Place and Open return for a path
// where no store can be written: a regular file, a socket or another
// non-directory; a directory holding files that are not a store's; a
// directory with no existing parent this user may write in; or a
// directory another user could replace or add files to (writable by
// everyone, or owned by another user). The message names the path, says
// what is wrong and how to fix it; nothing was changed.
var ErrNotStoreDir = storedir.ErrNotStoreDir

// ExpandHome returns dir with a leading "~" or "~/" replaced by the user's
// home directory (os.UserHomeDir), as a shell would: a path set in an
// environment variable or a configuration file reaches the program as
// written. Other paths, "~user" among them, are returned as they are.
func ExpandHome(dir string) string { return storedir.ExpandHome(dir) }

// Place returns the directory of the store a writer given dir writes: dir
// itself, its "~" expanded and its links followed (a part that does not
// exist yet is taken as written), or, for a store an earlier version put
// there, dir's LegacyChild. It fails, with an error matching
// ErrNotStoreDir that says how to fix it, for a path where the rule
// allows no store: a file or a socket, a directory holding anything but
// a store's own files, a directory that cannot be written or created, or
// one another user could replace or add files to. It creates and changes
// nothing. A writer calls it once, when it is set up, and uses the path
// it returns from then on.
func Place(dir string) (string, error) { return storedir.Place(dir) }

// Exists reports whether dir (as Place returned it) holds a store: a
// reader or an Importer asks before opening, so that looking creates
// nothing where nothing was ever written.
func Exists(dir string) bool { return storedir.IsStore(storedir.ExpandHome(dir)) }
