package testsupport

import (
	"os"
	"path/filepath"
)

// init points the stores a test opens, and the processes it starts, at a
// cache of their own (OTELRECORDS_CACHE_DIR, where a store's opener
// remembers the files it has read sound) rather than the user's
// ~/.cache/otelrecords: a test run must not fill, nor read, the cache of
// the machine's user. A test that sets the variable itself (t.Setenv)
// wins, and so does one set around `go test`.
func init() {
	if os.Getenv("OTELRECORDS_CACHE_DIR") == "" {
		os.Setenv("OTELRECORDS_CACHE_DIR", filepath.Join(os.TempDir(), "otelrecords-test-cache"))
	}
}
