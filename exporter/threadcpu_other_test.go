//go:build !linux

package exporter_test

import "time"

// threadCPU returns 0 where a thread's CPU time is not at hand.
func threadCPU() time.Duration { return 0 }
