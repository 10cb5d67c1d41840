package exporter

import "github.com/otelrecords/otelrecords/internal/write/intake"

// ErrDirInUse is matched by the error New returns for a directory another
// Exporter (or Importer) of this process records into and has not shut
// down. Two exporters of one process on one store would take turns with
// each other as two processes do, each reporting the other as "another
// process"; give each its own directory, or give one exporter to both
// providers.
var ErrDirInUse = intake.ErrDirInUse
