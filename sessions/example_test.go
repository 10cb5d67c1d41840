package sessions_test

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

// A program records through the exporter's span processor; Records reads
// the store back. The session is kept because it changed something, and the
// cache hit it observed before that change is kept with it.
func ExampleRecords() {
	store := sessions.NewMemStore()
	rec, _ := exporter.New("", exporter.WithStore(store))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("example")

	_, span := tracer.Start(context.Background(), "cache hit", spanbridge.Record("autotune")...)
	span.End()
	_, span = tracer.Start(context.Background(), "compiled", spanbridge.Record("compile", spanbridge.Changed())...)
	span.End()
	tp.Shutdown(context.Background())

	r := sessions.NewRecords(store.Reopen())
	for _, kind := range []string{"autotune", "compile"} {
		for rec := range r.All(kind) {
			fmt.Println(kind, rec.Stamp.Seq, rec.Record.Name)
		}
	}
	// Output:
	// autotune 0 cache hit
	// compile 1 compiled
}

// Typed reads decode each record's attributes into a struct through
// `record` tags.
func ExampleTyped() {
	store := sessions.NewMemStore()
	rec, _ := exporter.New("", exporter.WithStore(store))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))

	start := time.Now()
	_, span := tp.Tracer("example").Start(context.Background(), "tune matmul",
		append(spanbridge.Record("autotune", attribute.String("autotune.key", "matmul/128")),
			trace.WithTimestamp(start))...)
	span.SetAttributes(attribute.String("winner", "tiled"), spanbridge.Changed())
	span.End(trace.WithTimestamp(start.Add(3 * time.Millisecond)))
	tp.Shutdown(context.Background())

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

// Counts says how many records of each kind every session holds, from the
// keys alone, as `records sessions` shows them.
func ExampleRecords_Counts() {
	store := sessions.NewMemStore()
	rec, _ := exporter.New("", exporter.WithStore(store))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("example")
	for _, name := range []string{"tune matmul", "tune conv2d"} {
		_, span := tracer.Start(context.Background(), name, spanbridge.Record("autotune", spanbridge.Changed())...)
		span.End()
	}
	_, span := tracer.Start(context.Background(), "compile kernel", spanbridge.Record("compile", spanbridge.Changed())...)
	span.End()
	tp.Shutdown(context.Background())

	r := sessions.NewRecords(store.Reopen())
	counts, _ := r.Counts()
	for s, err := range r.Sessions() {
		if err != nil {
			return
		}
		c := counts[s.ID]
		fmt.Println("autotune:", c["autotune"], "compile:", c["compile"])
	}
	// Output:
	// autotune: 2 compile: 1
}

// Stores written apart (two CI runners, say) read as one: the sessions
// of both, oldest first, told apart by id.
func ExampleUnion() {
	runner := func(label string) *sessions.MemStore {
		store := sessions.NewMemStore()
		rec, _ := exporter.New("", exporter.WithStore(store), exporter.WithLabel(label))
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		_, span := tp.Tracer("ci").Start(context.Background(), "compile", spanbridge.Record("compile", spanbridge.Changed())...)
		span.End()
		tp.Shutdown(context.Background())
		return store.Reopen()
	}
	a, b := runner("runner a"), runner("runner b")

	r := sessions.NewRecords(sessions.Union([]sessions.Store{a, b}, nil))
	for s, err := range r.Sessions() {
		if err != nil {
			panic(err)
		}
		fmt.Println(s.Label)
	}
	// Output:
	// runner a
	// runner b
}

// Newest finds the session a program just recorded: the one to read back
// after a run, as `records report` reads by default.
func ExampleRecords_Newest() {
	dir, _ := os.MkdirTemp("", "newest")
	defer os.RemoveAll(dir)
	for _, label := range []string{"first run", "second run"} {
		rec, _ := exporter.New(dir, exporter.WithLabel(label))
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		_, span := tp.Tracer("example").Start(context.Background(), "compiled", spanbridge.Record("compile", spanbridge.Changed())...)
		span.End()
		tp.Shutdown(context.Background())
	}

	store, err := badgerstore.Open(dir, badgerstore.WithReadOnly())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	r := sessions.NewRecords(store)
	s, ok, err := r.Newest()
	if err != nil || !ok {
		fmt.Println("no session", err)
		return
	}
	fmt.Println(s.Label)
	for rec := range r.All("compile", sessions.InSession(s.ID)) {
		fmt.Println(rec.Stamp.Seq, rec.Record.Name)
	}
	// Output:
	// second run
	// 0 compiled
}

// A MemStore is a Store in memory: here Put writes a session as it was
// recorded elsewhere, and Records reads it back, as a test of a reader
// does without a disk.
func ExampleMemStore() {
	store := sessions.NewMemStore()
	r := sessions.NewRecords(store)
	id := sessions.SessionID(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	err := r.Put([]sessions.Session{{ID: id, Label: "nightly"}}, []sessions.KindRecord{
		{Kind: "compile", Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: 0},
			Record: sessions.Record{Name: "compile matmul", Wall: 40 * time.Millisecond, Effect: sessions.Changed},
		}},
	})
	if err != nil {
		panic(err)
	}
	for s := range r.Sessions() {
		fmt.Println(s.Label, s.Started().UTC().Format(time.DateTime))
	}
	for rec := range r.All("compile") {
		fmt.Println(rec.Record.Name, rec.Record.Wall, rec.Record.Effect)
	}
	// Output:
	// nightly 2026-01-02 03:04:05
	// compile matmul 40ms changed
}

// InStampOrder reads every kind of a session merged in stamp order: what
// the program did, in the order it did it, whichever subsystem wrote it.
func ExampleRecords_InStampOrder() {
	store := sessions.NewMemStore()
	rec, _ := exporter.New("", exporter.WithStore(store))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("example")
	for _, step := range []struct{ kind, name string }{
		{"cache", "lookup matmul"}, {"autotune", "tune matmul"}, {"compile", "compile matmul"}, {"cache", "store matmul"},
	} {
		_, span := tracer.Start(context.Background(), step.name, spanbridge.Record(step.kind, spanbridge.Changed())...)
		span.End()
	}
	tp.Shutdown(context.Background())

	r := sessions.NewRecords(store.Reopen())
	for kr, err := range r.InStampOrder([]string{"autotune", "cache", "compile"}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(kr.Stamp.Seq, kr.Kind, kr.Record.Name)
	}
	// Output:
	// 0 cache lookup matmul
	// 1 autotune tune matmul
	// 2 compile compile matmul
	// 3 cache store matmul
}

// Decode fills a struct from one record, as Typed does for every record
// of a kind: for a record read otherwise (from All, or InStampOrder's
// merge of several kinds).
func ExampleDecode() {
	type Cached struct {
		Key  string `record:"cache.key"`
		Hit  bool   `record:"cache.hit"`
		Name string `record:",name"`
	}
	rec := sessions.Record{Name: "lookup matmul", Attributes: sessions.Attrs{
		{Key: "cache.hit", Value: sessions.BoolValue(true)},
		{Key: "cache.key", Value: sessions.StringValue("matmul/128")},
	}}
	var c Cached
	if err := sessions.Decode(rec, &c); err != nil {
		panic(err)
	}
	fmt.Printf("%s: %s hit=%v\n", c.Name, c.Key, c.Hit)
	// Output:
	// lookup matmul: matmul/128 hit=true
}
