package recorder_test

import (
	"reflect"
	"testing"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
)

// Add covers every counter: a field added to Stats without a line in Add
// fails here, rather than reading 0 in an Importer's sums (as TracesSeen
// once did).
func TestStatsAddCoversEveryField(t *testing.T) {
	typ := reflect.TypeFor[recorder.Stats]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var one recorder.Stats
		v := reflect.ValueOf(&one).Elem().Field(i)
		switch v.Kind() {
		case reflect.Int64:
			v.SetInt(3)
		default:
			t.Fatalf("Stats.%s is a %s: teach this test (and Add) how to sum it", f.Name, f.Type)
		}
		var sum recorder.Stats
		sum.Add(one)
		if sum != one {
			t.Errorf("Add leaves out Stats.%s: zero + %+v = %+v", f.Name, one, sum)
		}
		// A second session: summed, or (the writer's own counters) the same.
		sum.Add(one)
		got := reflect.ValueOf(sum).Field(i).Int()
		if got != 6 && got != 3 {
			t.Errorf("Stats.%s: 3 added to 3 gives %d", f.Name, got)
		}
	}
}
