// Command peakanon runs a command, its output thrown away, and prints the
// peak of its anonymous resident memory (RssAnon, sampled from /proc) in
// MiB, for bench/views: `peakanon records --dir D report`.
package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/otelrecords/otelrecords/internal/testkit/bigstore"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peakanon command [args...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	peak, err := bigstore.RunPeakAnon(cmd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peakanon:", os.Args[1:], err)
		os.Exit(1)
	}
	fmt.Printf("%.1f\n", float64(peak)/(1<<20))
}
