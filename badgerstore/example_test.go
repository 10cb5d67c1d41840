package badgerstore_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

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
