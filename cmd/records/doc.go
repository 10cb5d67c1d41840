// Command records reads back what an environment remembers of how it was
// built: the sessions that changed a store, and the records each of them
// left, in the order they happened.
//
// A program instrumented with otelrecords writes records only for sessions
// that changed something, so a store is a short account of real work — a
// key tuned, a kernel compiled — rather than a log of every run. This
// command reads that account for people:
//
//	records sessions            which sessions ran, oldest first, and what each recorded
//	records summary             per session: duration, count and wall per kind, the slowest records
//	records timeline            marks nested by containment, with the records inside each
//	records show KIND           one kind's records, attributes as columns (--where key=value)
//	records dump                every record, in the order it was stamped
//	records diff                what one store recorded that another did not
//	records export              Chrome trace JSON (Perfetto) or OTLP JSON
//	records report              one self-contained HTML page: timeline, summary, tables
//	records replay              send sessions to an OpenTelemetry backend over OTLP
//	records pull                read sessions back from a Jaeger query service into the store
//	records prune, compact      keep the newest sessions; give disk space back
//	records doctor              move a damaged store aside and keep what is readable
//
// Listing commands print a table for a terminal, or, with --json, one JSON
// object per line (JSON Lines) for scripts and later tools; docs/FORMAT.md
// describes the objects of sessions and dump field by field, and each
// command's --help the rest.
//
// Readers open the store read-only and never create it: pointing the
// command at a directory where nothing was recorded says so and leaves no
// trace. The store directory is --dir, else $OTELRECORDS_DIR, else the
// per-user default (os.UserCacheDir()/otelrecords/default); --dir
// repeated, or a glob, reads several stores as one (records pull, which
// fills a store, creates it). While another
// process holds the store, the command asks it to yield and waits (up to
// --wait, 30 s by default), saying on standard error that it waits.
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
