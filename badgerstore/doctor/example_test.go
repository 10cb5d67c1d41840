package doctor_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/badgerstore/doctor"
	"github.com/otelrecords/otelrecords/sessions"
)

// aStore makes a store of three entries in a new temporary directory and
// returns it, closed, with a function that removes it.
func aStore() (dir string, remove func()) {
	tmp, err := os.MkdirTemp("", "doctor-example")
	if err != nil {
		log.Fatal(err)
	}
	dir = filepath.Join(tmp, "store")
	s, err := badgerstore.Open(dir, badgerstore.WithErrorHandler(nil))
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Write([]sessions.Entry{
		{Key: []byte("a"), Value: []byte("1")},
		{Key: []byte("b"), Value: []byte("2")},
		{Key: []byte("c"), Value: []byte("3")},
	}); err != nil {
		log.Fatal(err)
	}
	if err := s.Close(); err != nil {
		log.Fatal(err)
	}
	return dir, func() { os.RemoveAll(tmp) }
}

// Verify checks every file of a store; a MANIFEST cut short (a disk that
// lost its last write) is damage, named by file.
func ExampleVerify() {
	dir, remove := aStore()
	defer remove()

	damage, err := doctor.Verify(dir)
	fmt.Println("healthy:", len(damage), err)

	if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 12); err != nil {
		log.Fatal(err)
	}
	damage, err = doctor.Verify(dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range damage {
		fmt.Println("damaged:", filepath.Base(d.File))
	}
	// Output:
	// healthy: 0 <nil>
	// damaged: MANIFEST
}

// Recover moves a damaged store aside and puts a new one, holding what
// was readable, in its place; Badger's Open refused the damaged one.
func ExampleRecover() {
	dir, remove := aStore()
	defer remove()
	if err := os.Truncate(filepath.Join(dir, "MANIFEST"), 12); err != nil {
		log.Fatal(err)
	}

	rec, err := doctor.Recover(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("moved aside:", rec.Aside != "")
	fmt.Println("kept:", rec.Kept[""], "entries, lost:", rec.LostEntries)

	s, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for e, err := range s.Scan(nil, nil) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s=%s\n", e.Key, e.Value)
	}
	// Output:
	// moved aside: true
	// kept: 3 entries, lost: 0
	// a=1
	// b=2
	// c=3
}
