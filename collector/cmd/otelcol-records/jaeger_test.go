package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelrecords/otelrecords/collector/internal/jaegertest"
)

// send sends one sender process's session over OTLP/HTTP to the
// Collector's receiver on port: a compile record, which changed something
// when changed is true and only observed otherwise. It returns once the
// Collector answered success — what an acknowledgement is to a sender.
func send(t *testing.T, port int, service string, changed bool) {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", service)
	rs.Resource().Attributes().PutStr("service.instance.id", service+"-1")
	span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	rand.Read(tid[:])
	rand.Read(sid[:])
	span.SetTraceID(tid)
	span.SetSpanID(sid)
	span.SetName("compile app")
	now := time.Now()
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-10 * time.Millisecond)))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	span.Attributes().PutStr("records.kind", "artifact")
	span.Attributes().PutStr("target", "app")
	if changed {
		span.Attributes().PutStr("records.effect", "changed")
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/traces", port), "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the Collector answered %s to %s's batch", resp.Status, service)
	}
}

// jaegerSpans returns the spans Jaeger's query service holds for service,
// each as its tags.
func jaegerSpans(t *testing.T, j jaegertest.Jaeger, service string) []map[string]any {
	t.Helper()
	resp, err := http.Get(j.Query + "/api/traces?service=" + url.QueryEscape(service))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Data []struct {
			Spans []struct {
				Tags []struct {
					Key   string
					Value any
				}
			}
		}
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatalf("jaeger's traces of %s: %s: %v", service, resp.Status, err)
	}
	var spans []map[string]any
	for _, tr := range got.Data {
		for _, s := range tr.Spans {
			tags := map[string]any{}
			for _, tag := range s.Tags {
				tags[tag.Key] = tag.Value
			}
			spans = append(spans, tags)
		}
	}
	return spans
}

// waitInJaeger waits until Jaeger holds service's span, and checks it is
// the span it was — and, through the records processor (record), the
// record it was: its kind, and the seq the processor gave it.
func waitInJaeger(t *testing.T, j jaegertest.Jaeger, service string, p *collectorProc, record bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var spans []map[string]any
		for _, s := range jaegerSpans(t, j, service) {
			// Through the records processor a kept session's tally comes
			// too, a span of its own (docs/MAPPING.md §8.6): not the span
			// sent.
			if _, tally := s["records.tally"]; !tally {
				spans = append(spans, s)
			}
		}
		if len(spans) > 0 {
			if len(spans) != 1 || spans[0]["records.kind"] != "artifact" || spans[0]["target"] != "app" || record && spans[0]["records.seq"] == nil {
				t.Errorf("jaeger holds %s's spans as %v, want its one span (a record: with records.seq)", service, spans)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's changed session did not reach jaeger in a minute; the gateway's log:\n%s", service, p.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jaegerServices returns the services Jaeger holds spans of.
func jaegerServices(t *testing.T, j jaegertest.Jaeger) []string {
	t.Helper()
	resp, err := http.Get(j.Query + "/api/services")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct{ Data []string }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	return got.Data
}

// TestShippedConfigsIntoJaeger runs every shipped configuration that sends
// to a backend (gateway-processor.yaml, docs/COLLECTOR.md's gateway and
// receiving-side blocks) against a real, plaintext Jaeger — as Jaeger
// listens by default — in place of the backend it names: a changed
// session reaches it as the record it was, a warm one (behind the records
// processor) does not, and the Collector logs nothing above info from
// start to shutdown (a TLS handshake with a plaintext Jaeger fails, and
// at shutdown drops what it was told to send).
func TestShippedConfigsIntoJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Jaeger and a Collector on each configuration that sends to one")
	}
	j := jaegertest.Start(t)
	ran := 0
	for _, c := range shippedConfigs(t) {
		dir := t.TempDir()
		_, r := c.files(t, dir, j.OTLP)
		if !r.sends {
			continue
		}
		ran++
		t.Run(c.name, func(t *testing.T) {
			p := startCollector(t, c.name, dir, func() ([]string, []int) {
				var files []string
				files, r = c.files(t, dir, j.OTLP)
				return files, r.listens
			})
			service := strings.NewReplacer(".", "-", ":", "-").Replace(c.name)
			if r.http == 0 {
				t.Fatalf("%s has no OTLP/HTTP receiver (endpoint on 4318) for the test to send to", c.name)
			}
			send(t, r.http, service+"-warm", false)
			send(t, r.http, service+"-changed", true)
			processor := strings.Contains(c.yaml, "records:")
			waitInJaeger(t, j, service+"-changed", p, processor)
			p.stop(t)
			if bad := p.complaints(); len(bad) > 0 {
				t.Errorf("%s logged above info:\n%s", c.name, strings.Join(bad, "\n"))
			}
			if processor && slices.Contains(jaegerServices(t, j), service+"-warm") {
				t.Errorf("%s: a warm session reached jaeger through the records processor", c.name)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no shipped configuration sends to a backend: gateway-processor.yaml does")
	}
}

// TestGatewayProcessorAcknowledgesDurably checks what gateway-processor.yaml
// says an acknowledgement means: once a sender is answered, what the
// records processor kept is on the gateway's disk, in the exporter's
// persistent queue, and reaches Jaeger after a crash. Jaeger cannot be
// reached while the gateway acknowledges a changed session; the gateway
// is killed (SIGKILL) and started again with Jaeger reachable, and the
// session arrives.
func TestGatewayProcessorAcknowledgesDurably(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Jaeger and a Collector twice")
	}
	j := jaegertest.Start(t)
	var gateway shippedConfig
	for _, c := range shippedConfigs(t) {
		if c.name == "gateway-processor.yaml" {
			gateway = c
		}
	}
	if gateway.yaml == "" {
		t.Fatal("no gateway-processor.yaml")
	}
	dir := t.TempDir()
	// Nothing listens where the first gateway sends.
	var r rewritten
	first := startCollector(t, "gateway-processor.yaml, Jaeger unreachable", dir, func() ([]string, []int) {
		var files []string
		files, r = gateway.files(t, dir, fmt.Sprintf("127.0.0.1:%d", jaegertest.FreePort(t)))
		return files, r.listens
	})
	send(t, r.http, "queued", true)
	first.kill()

	// The same configuration and directories — the queue the first one
	// left — now sending to Jaeger.
	second := startCollector(t, "gateway-processor.yaml, restarted", dir, func() ([]string, []int) {
		again, r2 := gateway.files(t, dir, j.OTLP)
		return again, r2.listens
	})
	waitInJaeger(t, j, "queued", second, true)
	second.stop(t)
}
