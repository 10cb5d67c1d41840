package testsupport

import (
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
)

// AllRecords returns every record of every kind in s, in stamp order.
func AllRecords(t testing.TB, s sessions.Store) []sessions.KindRecord {
	t.Helper()
	r := sessions.NewRecords(s)
	kinds, err := r.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	var out []sessions.KindRecord
	for rec, err := range r.InStampOrder(kinds) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}
