//go:build !unix

package workload

import (
	"errors"
	"time"
)

// ProcessCPU is not measured on this system: the figures that need it run
// on Unix.
func ProcessCPU() (time.Duration, error) {
	return 0, errors.New("process CPU time is measured only on Unix")
}
