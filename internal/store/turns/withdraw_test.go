package turns

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A request is taken back by the opener that made it, and only by it: a
// marker another opener wrote since is left to that opener.
func TestWithdrawTakesBackOnlyOwnRequest(t *testing.T) {
	dir := t.TempDir()
	if err := Ask(dir, "1/1"); err != nil {
		t.Fatal(err)
	}
	Withdraw(dir, "2/1")
	if _, err := os.Lstat(filepath.Join(dir, file)); err != nil {
		t.Fatalf("another opener's Withdraw removed the marker: %v", err)
	}
	Withdraw(dir, "1/1")
	if _, err := os.Lstat(filepath.Join(dir, file)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the marker is still there after its opener withdrew: %v", err)
	}
}
