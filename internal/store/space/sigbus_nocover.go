//go:build linux && !(amd64 || arm64)

package space

import (
	"os"
	"sync/atomic"
)

// Where there is no SIGBUS handler of ours (sigbus_linux.go: its assembly
// is written for amd64 and arm64), the guard gives the reserve back itself
// when its hooks find the disk full.

// sigbusReleases counts nothing here.
var sigbusReleases atomic.Int64

// sigbusReserve is never made here.
type sigbusReserve struct{}

func coverReserve(f *os.File) *sigbusReserve    { return nil }
func (r *sigbusReserve) size() int64            { return 0 }
func (r *sigbusReserve) refill(was, size int64) {}
func (r *sigbusReserve) take() int64            { return 0 }
func (r *sigbusReserve) uncover()               {}

// HandlerAvailable reports whether the handler is in place: never here.
func HandlerAvailable() bool { return false }
