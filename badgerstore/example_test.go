package badgerstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

func Example() {
	tmp, err := os.MkdirTemp("", "otelrecords-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	s, err := badgerstore.Open(filepath.Join(tmp, "store"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	err = s.Write([]sessions.Entry{
		{Key: []byte("fruit/pear"), Value: []byte("green")},
		{Key: []byte("fruit/apple"), Value: []byte("red")},
		{Key: []byte("vegetable/leek"), Value: []byte("white")},
	})
	if err != nil {
		log.Fatal(err)
	}

	// Keys come back in byte order; "fruit0" is the first key past every
	// "fruit/..." ('0' follows '/').
	for e, err := range s.Scan([]byte("fruit/"), []byte("fruit0")) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s = %s\n", e.Key, e.Value)
	}
	// Output:
	// fruit/apple = red
	// fruit/pear = green
}

// A reader opens a store read-only, waiting while a writer holds it
// (OpenWait asks the writer to let it go), and reads it through package
// sessions.
func ExampleOpenWait() {
	tmp, err := os.MkdirTemp("", "otelrecords-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "store")
	w, err := badgerstore.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	id := sessions.SessionID(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	if err := sessions.NewRecords(w).Put([]sessions.Session{{ID: id, Label: "nightly"}}, nil); err != nil {
		log.Fatal(err)
	}
	w.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := badgerstore.OpenWait(ctx, dir, func(err error) { fmt.Println("waiting:", err) }, badgerstore.WithReadOnly())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for session, err := range sessions.NewRecords(s).Sessions() {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(session.Label)
	}
	// Output:
	// nightly
}

// The directory a user names is the store: a new one, or one holding only
// a store's files, is where the store goes; a directory of the user's own
// files is refused, naming the fix.
func ExamplePlace() {
	tmp, err := os.MkdirTemp("", "otelrecords-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	dir := filepath.Join(tmp, "records")
	placed, err := badgerstore.Place(dir)
	fmt.Println(filepath.Base(placed), err)

	if err := os.WriteFile(filepath.Join(tmp, "main.go"), []byte("package main\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	_, err = badgerstore.Place(tmp)
	fmt.Println(errors.Is(err, badgerstore.ErrNotStoreDir))
	// Output:
	// records <nil>
	// true
}
