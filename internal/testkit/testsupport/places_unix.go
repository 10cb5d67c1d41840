//go:build unix

package testsupport

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// NoStorePaths makes, under a new temporary directory, paths where no
// store can ever be written, and returns each with what the refusal should
// say: a regular file, a directory inside one, a listening Unix socket
// (closed at the test's end), a directory holding the user's file (the
// refusal names the subdirectory to use), and a directory every user may
// write without the sticky bit, with one inside it; run as root, also a
// directory another user owns.
func NoStorePaths(t testing.TB) map[string]string {
	t.Helper()
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(base, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(base, "users")
	if err := os.Mkdir(users, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(users, "notes.txt"), []byte("the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{
		users:                        "use a subdirectory, e.g. " + filepath.Join(users, "records"),
		file:                         "a regular file, not a directory",
		filepath.Join(file, "below"): "a regular file, not a directory",
		sock:                         "a socket, not a directory",
		open:                         "no sticky bit",
		filepath.Join(open, "new"):   "no sticky bit",
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(other, "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		paths[other] = "owned by another user"
	}
	return paths
}
