// Command bigstore builds a store of a given size through the real
// Recorder (bigstore.BuildBig), for bench/views, which measures the peak
// memory of the records commands on stores of growing size.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/otelrecords/otelrecords/internal/testkit/bigstore"
)

func main() {
	dir := flag.String("dir", "", "the store directory to create")
	mb := flag.Int64("mb", 25, "payload to write, in MiB (the store's size follows it)")
	records := flag.Int("records", 0, "records in each session, whatever their payload (instead of -mb)")
	def := bigstore.DefaultBig(0)
	n := flag.Int("sessions", def.Sessions, "sessions to write the payload in")
	value := flag.Int("value", def.ValueBytes, "the payload of an ordinary record, in bytes")
	every := flag.Int("huge-every", def.HugeEvery, "every n-th record is a huge one (0: none)")
	huge := flag.Int("huge", def.HugeBytes, "the payload of a huge record, in bytes")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "bigstore: give -dir")
		os.Exit(2)
	}
	if err := bigstore.BuildBig(*dir, bigstore.BigSpec{
		Bytes: *mb << 20, Records: *records, Sessions: *n, ValueBytes: *value, HugeEvery: *every, HugeBytes: *huge,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "bigstore:", err)
		os.Exit(1)
	}
}
