//go:build !unix

package storedir

import "io/fs"

// checkOwned does nothing where file modes do not say who may replace a
// directory's entries.
func checkOwned(string, fs.FileInfo, dirRole, bool, string) error { return nil }
