package badgerstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"
)

// fileMode is the mode Open gives the files of a private store: Badger
// creates its tables, logs, DISCARD and LOCK with 0666 less the umask (no
// option changes it), and the umask is the host process's, not ours to
// set.
const fileMode = 0o600

// privateFiles sets the files Badger and otelrecords keep in dir to
// fileMode when dir is private (no permission for group or others), so
// that a store stays unreadable to other users if its directory is opened
// up later. Files Badger creates while the store is open are set at the
// next Open or Close. A failure is returned; Open and Close report it to
// their handler and go on, since the directory still keeps others out.
func privateFiles(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		return err
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, de := range des {
		if !de.Type().IsRegular() || !storeFile(de.Name()) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // compacted away meanwhile
				errs = append(errs, err)
			}
			continue
		}
		if info.Mode().Perm() == fileMode {
			continue
		}
		if err := os.Chmod(filepath.Join(dir, de.Name()), fileMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("otelrecords: make the files of store %s private: %w", dir, err)
	}
	return nil
}

// storeFile reports whether name is a file Badger or otelrecords keeps in
// a store directory; other files there are not ours to change.
func storeFile(name string) bool {
	switch name {
	case badger.ManifestFilename, badger.KeyRegistryFileName, "DISCARD", "LOCK", "otelrecords.waiting", reserveName:
		return true
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}
