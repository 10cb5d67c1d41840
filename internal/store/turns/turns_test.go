package turns_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/store/turns"
)

// The marker's times are the file system's, which synctest's clock does
// not move: these tests set them with Chtimes instead.
func TestAskedByAnotherFreshWaiter(t *testing.T) {
	dir := t.TempDir()
	holder, waiter := turns.WriterToken(), turns.ReaderToken()
	opened := time.Now()
	if turns.Asked(dir, holder, opened) {
		t.Fatal("asked with no marker")
	}
	turns.Ask(dir, waiter)
	if !turns.Asked(dir, holder, opened) {
		t.Fatal("a fresh request from a reader was not seen")
	}
	if turns.Asked(dir, waiter, opened) {
		t.Fatal("an opener's own request counts as another's")
	}
	marker := filepath.Join(dir, "otelrecords.waiting")
	if b, _ := os.ReadFile(marker); string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("marker %q, want the pid and a newline (docs/FORMAT.md §7)", b)
	}

	old := time.Now().Add(-3 * time.Second)
	if err := os.Chtimes(marker, old, old); err != nil {
		t.Fatal(err)
	}
	if turns.Asked(dir, holder, opened) {
		t.Fatal("a stale marker counts as a request")
	}
	// Fresh, but written well before the holder opened the store: a request
	// someone else already served.
	turns.Ask(dir, waiter)
	if turns.Asked(dir, holder, time.Now().Add(10*time.Second)) {
		t.Fatal("a request older than the holder's open counts")
	}
}

func TestWriterTokensDiffer(t *testing.T) {
	a, b := turns.WriterToken(), turns.WriterToken()
	pid := strconv.Itoa(os.Getpid()) + "/"
	if a == b || !strings.HasPrefix(a, pid) || !strings.HasPrefix(b, pid) {
		t.Fatalf("writer tokens %q and %q, want two distinct <pid>/<n>", a, b)
	}
}

func TestAskOnAReadOnlyDirectoryIsHarmless(t *testing.T) {
	if err := turns.Ask(filepath.Join(t.TempDir(), "missing"), turns.ReaderToken()); err == nil {
		t.Fatal("Ask in a missing directory succeeded")
	}
}
