// Package storedir is the directory a store is: where it lives, what it
// may hold, its lock, and the journal that says where it went while a
// doctor swaps it for a recovered one.
//
// Where a store lives has one rule (Place): the path a user names is the
// store. Readers, writers and the doctor all start from the path Resolve
// gives, "~" expanded and links followed once, so that nothing done in
// the directory later sends one of them elsewhere. A store from elsewhere
// is untrusted: Check refuses a directory holding anything but regular
// files and directories before anything in it is opened. Lock takes the
// lock Badger takes (flock on the directory) without waiting, for those
// who read a store's files outside Badger: the check before Open, a
// reader's replay copies, the doctor. The journal (Journal) is the one
// file beside a store rather than in it: while it exists, the store's
// records are in the two directories it names.
//
// Package badgerstore gives users what of this is theirs (Place,
// ExpandHome, Exists, LegacyChild and the errors), with the rule in its
// documentation; package badgerstore/doctor is the journal's writer.
package storedir

import "errors"

// ErrLocked is matched by the error Lock returns for a directory another
// open holds (badgerstore.ErrLocked).
var ErrLocked = errors.New("otelrecords: store locked")

// ErrInterrupted is matched by the error Interrupted returns where a
// doctor run was cut short while it swapped the store
// (badgerstore.ErrRecoveryInterrupted).
var ErrInterrupted = errors.New("otelrecords: a records doctor run was cut short")
