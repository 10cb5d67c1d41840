// Package clock is the session clock: wall time for a session's id and
// start, and a monotonic reading for the offsets of its records. It is a
// seam so tests (and the golden files of the CLI) can fix time; the
// exporter takes it as a func() time.Time (exporter.WithClock), so nothing
// outside this module depends on this package.
package clock
