package badgerstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// A store to be created on a read-only file system is refused at once,
// naming the directory it cannot be created in.
func TestPlaceOnReadOnlyParent(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "1m")
	if err := os.Mkdir(filepath.Join(mnt, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	testsupport.RemountReadOnly(t, mnt)
	for _, dir := range []string{filepath.Join(mnt, "store"), filepath.Join(mnt, "sub", "a", "b")} {
		if _, err := badgerstore.Place(dir); !errors.Is(err, badgerstore.ErrNotStoreDir) || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("Place(%s) = %v, want ErrNotStoreDir saying it is not writable", dir, err)
		}
	}
}
