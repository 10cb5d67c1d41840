//go:build unix

package workload

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time, user and system, that every thread of
// this process has used so far (getrusage RUSAGE_SELF): the figures that
// count a span's whole cost take it before and after, so the background
// goroutines of a processor and of Badger, and the garbage collector, are
// in it as well as the caller.
func ProcessCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
