//go:build !windows && !plan9 && !js && !wasip1 && !aix

package badgerstore

// dirLocks is whether lockDir locks: a directory held by another process
// cannot be locked exclusively.
const dirLocks = true
