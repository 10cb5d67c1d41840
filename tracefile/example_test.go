package tracefile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tracefile"
)

// exampleStore returns a store of one session: a build's mark, and a
// compile inside it that outlived it, as a compile left running in the
// background does.
func exampleStore() *sessions.Records {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	id := sessions.SessionID(start.UnixNano())
	trace := sessions.TraceID{15: 1}
	r := sessions.NewRecords(sessions.NewMemStore())
	err := r.Put([]sessions.Session{{ID: id, StartedUnixMs: start.UnixMilli(), Label: "models build"}}, []sessions.KindRecord{
		{Kind: sessions.MarksKind, Stamped: sessions.Stamped[sessions.Record]{
			Stamp:  sessions.Stamp{Session: id, Seq: 0},
			Record: sessions.Record{Name: "build", Wall: 5 * time.Millisecond, TraceID: trace, SpanID: sessions.SpanID{7: 1}},
		}},
		{Kind: "compile", Stamped: sessions.Stamped[sessions.Record]{
			Stamp: sessions.Stamp{Session: id, Seq: 1, Offset: 2 * time.Millisecond},
			Record: sessions.Record{Name: "compile matmul", Wall: 7 * time.Millisecond, Effect: sessions.Changed,
				TraceID: trace, SpanID: sessions.SpanID{7: 2}, ParentSpanID: sessions.SpanID{7: 1}},
		}},
	})
	if err != nil {
		panic(err)
	}
	return r
}

// A Chrome trace, for Perfetto UI: the compile outlived the build's mark,
// so the events of one thread could not nest; it goes on a lane of its
// own.
func ExampleWriteChrome() {
	if err := tracefile.WriteChrome(os.Stdout, exampleStore(), tracefile.Options{}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"traceEvents":[
	// {"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{"name":"session 1735787045000000000: models build"}},
	// {"name":"process_sort_index","ph":"M","ts":0,"pid":1,"tid":0,"args":{"sort_index":1}},
	// {"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"lane 1"}},
	// {"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":1,"args":{"sort_index":1}},
	// {"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":2,"args":{"name":"lane 2"}},
	// {"name":"thread_sort_index","ph":"M","ts":0,"pid":1,"tid":2,"args":{"sort_index":2}},
	// {"name":"build","cat":"marks","ph":"X","ts":1735787045000000,"dur":5000,"pid":1,"tid":1,"args":{"kind":"marks","seq":0,"offset_ns":0,"wall_ns":5000000,"attributes":{},"trace_id":"00000000000000000000000000000001","span_id":"0000000000000001"}},
	// {"name":"compile matmul","cat":"compile","ph":"X","ts":1735787045002000,"dur":7000,"pid":1,"tid":2,"args":{"kind":"compile","seq":1,"offset_ns":2000000,"wall_ns":7000000,"attributes":{},"trace_id":"00000000000000000000000000000001","span_id":"0000000000000002","parent_span_id":"0000000000000001"}}
	// ],
	// "displayTimeUnit":"ms"}
}

// OTLP JSON, for a Collector's OTLP/HTTP receiver: the spans replay would
// send, with the records' own ids, one ResourceSpans a session.
func ExampleWriteOTLP() {
	var b strings.Builder
	if _, err := tracefile.WriteOTLP(context.Background(), &b, exampleStore(), tracefile.Options{}); err != nil {
		fmt.Println(err)
		return
	}
	var file struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					Name, TraceID, SpanID, ParentSpanID string
					StartTimeUnixNano                   string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(b.String()), &file); err != nil {
		fmt.Println(err)
		return
	}
	for _, rs := range file.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				fmt.Printf("%s: trace %s span %s parent %q, from %s\n", s.Name, s.TraceID, s.SpanID, s.ParentSpanID, s.StartTimeUnixNano)
			}
		}
	}
	// Output:
	// build: trace 00000000000000000000000000000001 span 0000000000000001 parent "", from 1735787045000000000
	// compile matmul: trace 00000000000000000000000000000001 span 0000000000000002 parent "0000000000000001", from 1735787045002000000
}
