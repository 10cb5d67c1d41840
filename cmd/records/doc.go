// Command records reads back what an environment remembers of how it was
// built: the sessions that changed a store, and the records each of them
// left, in the order they happened.
//
// A program instrumented with otelrecords writes records only for sessions
// that changed something, so a store is a short account of real work — a
// key tuned, a kernel compiled — rather than a log of every run. This
// command is the first reader of that account for people:
//
//	records sessions            which sessions ran, oldest first, and what each recorded
//	records dump                every record, in the order it was stamped
//
// Both print a table for a terminal, or, with --json, one JSON object per
// line (JSON Lines) for scripts and later tools; docs/FORMAT.md describes
// those objects field by field.
//
// The store is opened read-only and never created: pointing the command at
// a directory where nothing was recorded says so and leaves no trace. The
// store directory is --dir, else $OTELRECORDS_DIR, else the per-user
// default (os.UserCacheDir()/otelrecords/default). A store another process
// holds open for writing is reported as busy.
//
// A store travels between machines and is read as untrusted input: text
// output strips control characters from every field it prints, so a span
// named "\x1b[31m..." cannot drive the terminal, and JSON output is valid
// for any bytes. Values that do not decode are skipped and counted, and the
// count is reported on standard error.
//
// Exit codes: 0 on success, 1 when the store cannot be read (missing, busy,
// damaged), 2 on a usage error (an unknown command or flag).
package main
