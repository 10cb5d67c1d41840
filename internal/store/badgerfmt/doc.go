// Package badgerfmt reads the files of a Badger store without opening it:
// to tell, before Badger sees a store, whether it is safe to open, and to
// recover what is readable from one that is not. It is forensics, kept
// out of the store's main room (package badgerstore), which calls it
// through a few thin calls.
//
// # Why read what Badger reads
//
// Badger opens tables in goroutines of its own, where a panic on a
// damaged table (a truncated .sst, say) ends the host process and no
// recover can help; and some damage it accepts without a word and then
// loses data over — a MANIFEST cut short makes it delete the tables it no
// longer lists, a log damaged in the middle is truncated there. So every
// file Badger's Open reads is read here first ([CheckForOpen]), with
// Badger's own table code run in a goroutine of ours, under recover and
// with faults turned into panics, and a damaged file is reported by name
// ([Damage]) instead.
//
// What CheckForOpen reads is what Badger's Open reads, so that it costs
// about as much again and no more: the MANIFEST, the index and last block
// of every table it lists, and every entry of the logs (.mem files only
// exist after a crash; .vlog files hold values of 128 KiB or more, rare in
// records). [CheckAll] reads the data blocks of the tables as well, as
// `records doctor` does: reading them all at every open would cost as
// much as reading the whole store. A process that opens one store again
// and again reads only the tables that are new or changed since its last
// check of it: Badger never rewrites a table.
//
// A crash is not damage. A writer killed in the middle of a write leaves
// a log that ends in a torn entry followed by zeros; Badger drops it on
// its next open, and so the checks pass it. Damage is what a crash cannot
// leave: a file cut short, an entry whose checksum fails though its last
// byte was written, intact entries after one that does not decode.
//
// # Salvage
//
// [Salvage] reads a damaged store without Badger's database code: every
// block of every table that reads, every intact log entry, stepping over
// damaged stretches, and every value of the value log a pointer leads to
// intact. It returns the newest live version of each key, and says what
// it could not read; badgerstore writes the entries into a new store.
//
// # One version of Badger
//
// Badger does not export its log reader, and says nothing of its formats
// as an interface, so the log format, the KEYREGISTRY's size, an entry's
// meta bits and the value pointer's layout are written here from the
// source of Badger v4.9.6 ([BadgerVersion]). A test fails when go.mod
// moves to another version, so that these readers are checked against it;
// and a program that links another version (its own go.mod may ask for a
// newer Badger than ours) is told so by [CheckVersion], which CheckAll and
// Salvage obey rather than misread a store.
//
// The package knows Badger's files and nothing of what a store keeps in
// them: it imports neither badgerstore nor sessions, and a caller that
// wants keys named for people passes the naming in.
package badgerfmt
