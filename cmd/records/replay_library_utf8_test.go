package main

// The replay package's own repair, through a real OTLP exporter that
// marshals to protobuf. It lives in the records command's module, whose
// go.mod carries the OTLP exporters, so that the library's does not.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
)

// protoClient is an OTLP client that marshals what it is given to
// protobuf, as the gRPC and HTTP clients do before sending, and keeps the
// spans' names. Protobuf refuses a string that is not UTF-8.
type protoClient struct{ names []string }

func (*protoClient) Start(context.Context) error { return nil }
func (*protoClient) Stop(context.Context) error  { return nil }

func (c *protoClient) UploadTraces(_ context.Context, rss []*tracepb.ResourceSpans) error {
	for _, rs := range rss {
		if _, err := proto.Marshal(rs); err != nil {
			return err
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return nil
}

// TestReplayRepairsInvalidUTF8: records hold the bytes their spans were
// given, UTF-8 or not, and OTLP carries only UTF-8. Replay sends every
// record, with each run of invalid bytes replaced by U+FFFD, and says which
// it repaired. Before, the OTLP exporter refused the first batch holding
// such a record, after sending part of the store.
func TestReplayLibraryRepairsInvalidUTF8(t *testing.T) {
	mem := sessions.NewMemStore()
	bad := "bad \xff\xfe"
	res := sessions.Attrs{{Key: "service.name", Value: sessions.StringValue("svc " + bad)}}
	var stamps []sessions.Stamp
	testsupport.Write(t, func() (sessions.Store, error) { return mem, nil }, libraryT0, recorder.Config{Label: bad, Resource: res}, func(s *testsupport.Session) {
		put := func(kind string, e sessions.Effect, body sessions.Record) {
			st := s.Stamp(time.Time{})
			s.Put(kind, e, st, body)
			stamps = append(stamps, st)
		}
		put("compile", sessions.Changed, sessions.Record{Name: "fine"})
		for i := range 1200 { // past a batch, so the bad ones are not in the first
			put("compile", sessions.Observed, sessions.Record{Name: fmt.Sprint("fine ", i)})
		}
		put("compile", sessions.Observed, sessions.Record{Name: bad})
		put("compile", sessions.Observed, sessions.Record{Name: "attrs", Attributes: sessions.Attrs{
			{Key: "key " + bad, Value: sessions.StringValue("v")},
			{Key: "value", Value: sessions.StringValue(bad)},
			{Key: "array", Value: sessions.SliceValue([]string{"ok", bad})},
		}})
		put("compile", sessions.Observed, sessions.Record{Name: "event", Events: []sessions.Event{{Name: bad, Attributes: sessions.Attrs{{Key: "k", Value: sessions.StringValue(bad)}}}}})
		put("compile", sessions.Observed, sessions.Record{Name: "status", Status: sessions.Status{Code: "error", Description: bad}})
		put("compile", sessions.Observed, sessions.Record{Name: "scope", Scope: sessions.Scope{Name: bad, Version: bad}})
		put("kind \xff", sessions.Observed, sessions.Record{Name: "kind"})
	})

	client := &protoClient{}
	exp, err := otlptrace.New(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	p, err := replay.Replay(context.Background(), sessions.NewRecords(mem.Reopen()), exp, replay.Options{})
	if err != nil {
		t.Fatalf("Replay after %d spans: %v", p.Spans, err)
	}
	// The records, and the session's tally.
	if len(client.names) != len(stamps)+1 || p.Spans != len(stamps) || p.Tallies != 1 {
		t.Fatalf("sent %d spans (progress %d, %d tallies), want %d and 1", len(client.names), p.Spans, p.Tallies, len(stamps))
	}
	if p.Repaired != 6 || p.RepairedSessions != 1 {
		t.Errorf("repaired %d records and %d sessions, want 6 and 1", p.Repaired, p.RepairedSessions)
	}
	// The first five, in stamp order: every kind's records of a session
	// come in seq order.
	for i, st := range p.FirstRepaired {
		if want := stamps[len(stamps)-6+i]; st != want {
			t.Errorf("FirstRepaired[%d] = %+v, want %+v", i, st, want)
		}
	}
	if got := client.names[len(client.names)-7]; got != "bad \uFFFD" { // the session's tally last
		t.Errorf("repaired name %q", got)
	}
}

// libraryT0 is when the session of TestReplayLibraryRepairsInvalidUTF8
// starts.
var libraryT0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
