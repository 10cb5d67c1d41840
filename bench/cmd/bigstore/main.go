// Command bigstore builds a store of a given size through the real
// Recorder (testsupport.BuildBig), for bench/views, which measures the peak
// memory of the records commands on stores of growing size.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

func main() {
	dir := flag.String("dir", "", "the store directory to create")
	mb := flag.Int64("mb", 25, "payload to write, in MiB (the store's size follows it)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "bigstore: give -dir")
		os.Exit(2)
	}
	if err := testsupport.BuildBig(*dir, testsupport.DefaultBig(*mb<<20)); err != nil {
		fmt.Fprintln(os.Stderr, "bigstore:", err)
		os.Exit(1)
	}
}
