//go:build windows || plan9 || js || wasip1 || aix

package badgerstore

// dirLocks is whether lockDir locks: here it does not.
const dirLocks = false
