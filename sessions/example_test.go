package sessions_test

import (
	"fmt"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// The retention rules without OpenTelemetry: a Recorder holds what a
// session observes until its first change, then keeps it all.
func ExampleRecorder() {
	store := sessions.NewMemStore()
	rec := sessions.NewRecorder(sessions.Config{Level: sessions.LevelBasic},
		func() (sessions.Store, error) { return store, nil }, nil)

	st, _ := rec.Stamp(time.Time{})
	rec.Record("autotune", sessions.Observed, st, sessions.Record{Name: "cache hit"})
	fmt.Println("kept after a hit:", rec.Kept())
	st, _ = rec.Stamp(time.Time{})
	rec.Record("compile", sessions.Changed, st, sessions.Record{Name: "compiled"})
	fmt.Println("kept after a change:", rec.Kept())
	rec.Close()

	r := sessions.NewRecords(store.Reopen())
	for _, kind := range []string{"autotune", "compile"} {
		for rec := range r.All(kind) {
			fmt.Println(kind, rec.Stamp.Seq, rec.Record.Name)
		}
	}
	// Output:
	// kept after a hit: false
	// kept after a change: true
	// autotune 0 cache hit
	// compile 1 compiled
}

// Typed reads decode each record's attributes into a struct through
// `record` tags.
func ExampleTyped() {
	store := sessions.NewMemStore()
	rec := sessions.NewRecorder(sessions.Config{Level: sessions.LevelBasic},
		func() (sessions.Store, error) { return store, nil }, nil)
	st, _ := rec.Stamp(time.Time{})
	rec.Record("autotune", sessions.Changed, st, sessions.Record{
		Name: "tune matmul", Wall: 3 * time.Millisecond,
		Attributes: sessions.Attrs{
			{Key: "autotune.key", Value: sessions.StringValue("matmul/128")},
			{Key: "winner", Value: sessions.StringValue("tiled")},
		},
	})
	rec.Close()

	type Tune struct {
		Key    string        `record:"autotune.key"`
		Winner string        `record:"winner"`
		Wall   time.Duration `record:",wall"`
	}
	r := sessions.NewRecords(store.Reopen())
	for t, err := range sessions.Typed[Tune](r, "autotune") {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s -> %s in %v\n", t.Record.Key, t.Record.Winner, t.Record.Wall)
	}
	// Output:
	// matmul/128 -> tiled in 3ms
}
