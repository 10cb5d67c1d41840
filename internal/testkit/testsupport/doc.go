// Package testsupport holds the helpers that tests in several packages of
// this repository share, so that each is written once: a tmpfs to fill up
// or turn read-only (the hostile-host tests of badgerstore and exporter),
// a collector for the errors a store or OpenTelemetry reports, and the
// contents of a store as one map.
//
// Only tests import it (_test.go files; internal/testkit/layout checks that no
// other code does). Of the library it imports only the sessions model,
// for the Store interface, so that the tests of every other package,
// badgerstore's own included, can use it without an import cycle.
package testsupport
