package main

import (
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// effectOf returns the record's effect as the JSON views print it,
// "changed" or "observed", or nil (null) for a record that does not say:
// one written before records kept their effect, which reads as observed
// whatever it did (explain.StoredBody).
func effectOf(rec *sessions.Record) *string {
	effect, known := explain.StoredBody.Effect(rec)
	if !known {
		return nil
	}
	s := effect.String()
	return &s
}

// nodeEffectCell returns a tree node's effect as the text views print it,
// as effectCell does a record's.
func nodeEffectCell(n *explain.Node) string {
	if effect, known := n.Effect(); known {
		return effect.String()
	}
	return "-"
}

// effectCell returns the record's effect as the text views print it:
// "changed", "observed", or "-" where the record does not say.
func effectCell(rec *sessions.Record) string {
	if e := effectOf(rec); e != nil {
		return *e
	}
	return "-"
}
