// Package owned carries from package sessions to the writers a way to
// decode the entries the exporter's own encoder has just made, without
// the checks a value read from a store needs (importer.DecodeEntry).
//
// sessions.DecodeEntry reads a value twice: a first pass that allocates
// nothing proves the value is one the hand-written decoder reads within
// its budget, and only then a second pass builds the record, so that no
// value, however hostile, makes two decoders allocate. A value this
// process encoded a moment ago is not hostile: the Collector's records
// processor decodes every record it hands on, and the first pass was a
// quarter of that. Package sessions sets DecodeEntry here rather than
// exporting it, so that the shortcut is not an API a reader of stores
// could take for its own.
package owned

// DecodeEntry is sessions.DecodeEntry for an entry (key, value) encoded
// by this module's own encoder: rec must be a *sessions.Stamped
// [sessions.Record] and row a *sessions.Session, filled as DecodeEntry
// returns them, and the kind and error are DecodeEntry's. A value the
// single pass does not read is decoded by DecodeEntry itself, so the
// answer is the same for every value; only the cost differs. rec's
// attributes are read into the array of those it held, so that a caller
// decoding entries one after another into the same rec, and copying them
// out before the next call, allocates it once. Package sessions sets it
// at init.
var DecodeEntry func(key, value []byte, rec, row any) (kind string, err error)
