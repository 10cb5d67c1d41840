package badgerstore

import (
	"context"
	"fmt"
	"io"
	"os"
)

// readerChild is the helper process of a reader: it opens the store at
// dir read-only, says "ready", and holds it until its stdin closes (or it
// is killed).
func readerChild(dir string) {
	s, err := OpenWait(context.Background(), dir, nil, WithReadOnly())
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = s.Close()
}
