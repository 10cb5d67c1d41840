package recorder_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestHugeValuesAreRefusedWithoutACopy encodes records whose strings alone
// are past MaxRecordSize — a 64 MiB attribute, an event's, a name, many
// string-array elements — and checks each is refused with ErrTooLarge
// having allocated less than a MiB: no copy of the value is made to be
// thrown away. A record of just under the limit is still encoded.
func TestHugeValuesAreRefusedWithoutACopy(t *testing.T) {
	huge := strings.Repeat("x", 64<<20)
	cases := map[string]sessions.Record{
		"attribute":       {Attributes: sessions.Attrs{{Key: "src", Value: sessions.StringValue(huge)}}},
		"event attribute": {Events: []sessions.Event{{Name: "e", Attributes: sessions.Attrs{{Key: "src", Value: sessions.StringValue(huge)}}}}},
		"name":            {Name: huge},
		"string array":    {Attributes: sessions.Attrs{{Key: "a", Value: sessions.SliceValue([]string{huge[:8<<20], huge[:8<<20]})}}},
	}
	for name, body := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := recorder.AppendEncoded(make([]byte, 0, 1024), "work", sessions.Stamp{}, &body)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, recorder.ErrTooLarge) {
			t.Errorf("%s: AppendEncoded = %v, want ErrTooLarge", name, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%s: refusing the record allocated %d bytes, want under 1 MiB", name, n)
		}
	}
	fits := sessions.Record{Attributes: sessions.Attrs{{Key: "src", Value: sessions.StringValue(huge[:keys.MaxRecordSize-1024])}}}
	if _, err := recorder.AppendEncoded(nil, "work", sessions.Stamp{}, &fits); err != nil {
		t.Errorf("a record just under MaxRecordSize: %v", err)
	}
}
