package stores

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
)

// OpenStaging opens an empty store beside the one in dir (or in the
// temporary directory, when its parent takes no new directory) for a
// pull to stage what it reads in, and returns it with what removes it.
// One a pull killed before it could remove it is removed first: the pull
// holds the store, so no other pull into it is under way.
func OpenStaging(dir string) (*badgerstore.Store, func() error, error) {
	dir = filepath.Clean(dir)
	pattern := "." + filepath.Base(dir) + ".pull-"
	if stale, err := filepath.Glob(filepath.Join(filepath.Dir(dir), pattern+"*")); err == nil {
		for _, old := range stale {
			os.RemoveAll(old)
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), pattern)
	if err != nil {
		if tmp, err = os.MkdirTemp("", pattern); err != nil {
			return nil, nil, fmt.Errorf("a directory to stage the pull in: %w", err)
		}
	}
	st, err := badgerstore.Open(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, fmt.Errorf("a store to stage the pull in, at %s: %w", render.Clean(tmp), err)
	}
	return st, func() error {
		err := st.Close()
		if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
			err = rerr
		}
		return err
	}, nil
}
