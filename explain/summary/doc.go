// Package summary sums a store up the way people read it, in bounded
// memory: Sessions gives each session's row of `records summary` (when,
// how long, each kind's time counted once, its slowest records and its
// critical path, named), and NewReport lays one session out for a page
// (`records report`): each kind's counts and first records, the slowest,
// the critical path, and its timeline, every drawn record on a row under
// the record it ran inside, and a server's many roots grouped by kind and
// name.
//
// It asks package explain, and holds what explain's trees hold (a few
// words a record of the largest session), plus what it keeps of each
// session: a few records, cut (Compact), never a record's attributes. What
// a page shows of a record it reads again (NewReport leaves the seqs).
// Names the tree does not hold are read again and cut (Name), so a
// session of a million distinct names costs what a session of one does.
package summary
