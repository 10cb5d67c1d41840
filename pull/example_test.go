package pull_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
)

// A store replayed to Jaeger comes back from its query service as it was:
// here a stand-in for Jaeger's query service (a real one is
// http://jaeger:16686), which the replay fills.
func ExamplePull() {
	orig := sessions.NewMemStore()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := sessions.SessionID(start.UnixNano())
	sessions.NewRecords(orig).Put(
		[]sessions.Session{{ID: id, StartedUnixMs: start.UnixMilli(), Label: "nightly build", Resource: sessions.Attrs{{Key: "service.name", Value: sessions.StringValue("build")}}}},
		[]sessions.KindRecord{{Kind: "compile", Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: 3, Offset: 1500 * time.Microsecond},
			Record: sessions.Record{Name: "compile matmul", Wall: time.Millisecond, Effect: sessions.Changed, Inputs: []string{}},
		}}})
	jaeger := newFake()
	replay.Replay(context.Background(), sessions.NewRecords(orig), jaeger, replay.Options{})
	srv := httptest.NewServer(jaeger)
	defer srv.Close()

	pulled := sessions.NewMemStore()
	j, _ := pull.NewJaeger(srv.URL, nil, nil)
	p, err := pull.Pull(context.Background(), j, sessions.NewRecords(pulled), pull.Options{Services: []string{"build"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Sessions, "session,", p.Records, "record")
	r := sessions.NewRecords(pulled)
	row, _, _ := r.Session(id)
	fmt.Println(row.Label)
	for rec := range r.All("compile") {
		fmt.Println(rec.Stamp.Seq, rec.Stamp.Offset, rec.Record.Name, rec.Record.Effect)
	}
	// Output:
	// 1 session, 1 record
	// nightly build
	// 3 1.5ms compile matmul changed
}
