package cborwire_test

import (
	"slices"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/cborwire"
)

// TestRecordKeysInOrder checks that each group of record keys is listed in
// the order an encoder writes them.
func TestRecordKeysInOrder(t *testing.T) {
	c := cborwire.CompareKeys
	groups := [][]string{
		{cborwire.KeyStamp, cborwire.KeyRecord},
		{cborwire.KeySeq, cborwire.KeySession, cborwire.KeyOffset},
		{cborwire.KeyName, cborwire.KeyAttrs, cborwire.KeyLinks, cborwire.KeyScope, cborwire.KeyEffect,
			cborwire.KeyEvents, cborwire.KeyInputs, cborwire.KeyStatus, cborwire.KeySpanID, cborwire.KeyWall,
			cborwire.KeyTraceID, cborwire.KeySpanKind, cborwire.KeyTraceState, cborwire.KeyDroppedAttrs,
			cborwire.KeyDroppedLinks, cborwire.KeyDroppedEvents, cborwire.KeyParentSpanID},
		{cborwire.KeyName, cborwire.KeyAttrs, cborwire.KeyOffset},
		{cborwire.KeyAttrs, cborwire.KeySpanID, cborwire.KeyTraceID, cborwire.KeyTraceState},
		{cborwire.KeyName, cborwire.KeyVersion},
		{cborwire.KeyCode, cborwire.KeyDescription},
	}
	for _, g := range groups {
		if !slices.IsSortedFunc(g, c) || len(slices.CompactFunc(slices.Clone(g), func(a, b string) bool { return a == b })) != len(g) {
			t.Errorf("keys %q are not in strictly ascending encoded order", g)
		}
	}
}
