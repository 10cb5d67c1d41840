package main

import (
	"iter"

	"github.com/otelrecords/otelrecords/sessions"
)

// kindRecord is a record and the kind it was read from.
type kindRecord = sessions.KindRecord

// inStampOrder yields the records of the given kinds in stamp order across
// kinds (see sessions.Records.InStampOrder).
func inStampOrder(r *sessions.Records, kinds []string, opts ...sessions.ReadOption) iter.Seq2[kindRecord, error] {
	return r.InStampOrder(kinds, opts...)
}
