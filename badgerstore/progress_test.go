package badgerstore

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// WithWriteProgress reports every entry of a write once, progressEvery
// at a time while Badger takes them and the rest when the write is done,
// and nothing for a write it refuses.
func TestWriteProgress(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []int
	)
	s, err := Open(filepath.Join(t.TempDir(), "store"), WithWriteProgress(func(n int) {
		mu.Lock()
		calls = append(calls, n)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := func() []int {
		mu.Lock()
		defer mu.Unlock()
		c := calls
		calls = nil
		return c
	}

	// 3,000 entries of 300 bytes: several of Badger's transactions.
	entries := make([]sessions.Entry, 3000)
	for i := range entries {
		entries[i] = sessions.Entry{Key: fmt.Appendf(nil, "k%05d", i), Value: make([]byte, 300)}
	}
	if err := s.Write(entries); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Repeat([]int{progressEvery}, 3000/progressEvery), 3000%progressEvery)
	if c := got(); !slices.Equal(c, want) {
		t.Errorf("a write of 3,000 entries reported %v, want %v", c, want)
	}
	if err := s.Write(entries[:progressEvery]); err != nil {
		t.Fatal(err)
	}
	if c := got(); !slices.Equal(c, []int{progressEvery}) {
		t.Errorf("a write of %d entries reported %v, want [%d]", progressEvery, c, progressEvery)
	}
	if err := s.Write([]sessions.Entry{{Key: []byte("k"), Value: []byte("v")}, {}}); err == nil {
		t.Fatal("a write with an empty key succeeded")
	}
	if c := got(); len(c) != 0 {
		t.Errorf("a refused write reported %v, want nothing", c)
	}
}
