//go:build !linux

package badgerstore

import "github.com/otelrecords/otelrecords/sessions"

// checkSpace checks nothing where free space is not asked of the file
// system: a full disk may then crash the process (see space.go).
func checkSpace(dir string) error { return nil }

// reserveLog allocates nothing where fallocate is not available.
func reserveLog(dir string) error { return nil }

// checkWriteSpace checks nothing where free space is not asked of the file
// system.
func checkWriteSpace(dir string, entries []sessions.Entry) error { return nil }
