package instruments_test

import (
	"fmt"

	"github.com/otelrecords/otelrecords/instruments"
)

// The table read as a Go SDK program's metrics are named: an alert on
// records lost watches records.dropped, whatever its cause.
func Example() {
	for _, in := range instruments.Of(instruments.SDK) {
		if in.Name == instruments.DroppedName {
			fmt.Println(instruments.PrefixSDK+in.Name, in.Unit)
			for _, p := range in.Points {
				fmt.Printf("  %s=%s reads Stats.%s\n", p.Key, p.Value, p.Field)
			}
		}
	}
	// Output:
	// otelrecords.records.dropped {record}
	//   cause=queue_full reads Stats.Dropped
	//   cause=evicted reads Stats.Evicted
	//   cause=too_large reads Stats.TooLarge
	//   cause=invalid reads Stats.Invalid
	//   cause=unwritable reads Stats.Unwritable
}
