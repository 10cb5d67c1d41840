// Command otel is a pretend build instrumented with ordinary OpenTelemetry
// spans and recorded by otelrecords: the program the README's first command
// runs.
//
// It marks three phases (load, tune, compile: explicit marks, made with
// spanbridge.Mark), tunes a few keys and compiles a few kernels, with
// nested spans; a span without records.kind (read manifest) stands for
// third-party instrumentation and, enclosing no record, is not recorded. A key or kernel already in its
// cache is only observed; a new one is tuned or compiled, stored in the
// cache, and its span says records.effect=changed. So the first run (cold)
// changes things and is kept, with everything it observed before its first
// change; a second run on the same cache (warm) finds everything cached and
// leaves nothing in the store. After each run it reads the store back
// through the Records reader and prints what it holds.
//
//	go run ./examples/otel              # cold: kept
//	go run ./examples/otel              # warm: nothing written
//	go run ./examples/otel -reset       # forget the cache and the example's sessions
//
// With -clock TIME the build runs on a pretend clock that starts at TIME
// and moves only by the work it pretends to do (each step its nominal time,
// give or take a third, drawn from a generator seeded by TIME): every span
// is given its time (trace.WithTimestamp), so the run records the same
// session, id and times on every machine. docs/CLI.md's sample outputs
// are made so, and cmd/records/docs_test.go checks them.
//
// The store is the default one (see badgerstore.DefaultDir) unless -dir
// says otherwise; the cache lives beside it, in <dir>-cache. The default
// store is also where the user's own programs record, so the example
// deletes nothing it did not write: it keeps every session (no
// WithKeepSessions), and -reset deletes only the sessions whose Resource
// says service.name=example-build, with their records.
package main
