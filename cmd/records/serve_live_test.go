package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// TestServeLetsAWriterIn: records serve holds its store open between
// pages, yet a program that writes the store while it serves gets it at
// once (it asks, and serve lets go: nothing is spooled, ForceFlush
// returns within seconds), the pages show what it wrote, and a session's
// page hears of each record it writes (server-sent events).
func TestServeLetsAWriterIn(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a store while a program writes it")
	}
	dir := filepath.Join(t.TempDir(), "store")
	write := func(exp *exporter.Exporter, tp *sdktrace.TracerProvider, name string) time.Duration {
		t.Helper()
		_, span := tp.Tracer("live").Start(context.Background(), name, spanbridge.Record("compile", attribute.String("kernel", name))...)
		span.SetAttributes(spanbridge.Changed())
		span.End()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		began := time.Now()
		if err := exp.ForceFlush(ctx); err != nil {
			t.Fatal(err)
		}
		return time.Since(began)
	}
	open := func(label string) (*exporter.Exporter, *sdktrace.TracerProvider) {
		exp, err := exporter.New(dir, exporter.WithLabel(label))
		if err != nil {
			t.Fatal(err)
		}
		return exp, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	}
	exp, tp := open("before")
	write(exp, tp, "k0")
	tp.Shutdown(context.Background())

	base := startServe(t, dir)
	get(t, base, "/sessions") // serve holds the store now

	exp, tp = open("live")
	defer tp.Shutdown(context.Background())
	if took := write(exp, tp, "k1"); took > 10*time.Second {
		t.Errorf("a writer's ForceFlush took %v while serve held the store", took)
	}
	if st := exp.Stats(); st.Spooled != 0 {
		t.Errorf("the writer spooled %d records: serve did not let the store go", st.Spooled)
	}
	ids := decodeLines(t, get(t, base, "/api/sessions"))
	if len(ids) != 2 || ids[0]["label"] != "live" {
		t.Fatalf("/api/sessions after the writer wrote: %v, want the live session first", ids)
	}
	id := ids[0]["id"].(string)

	resp, err := http.Get(base + "/sessions/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: Content-Type %q", ct)
	}
	events := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") || strings.HasPrefix(line, "event: ") {
				events <- line
			}
		}
		close(events)
	}()
	next := func(want string) string {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case line, ok := <-events:
				if !ok {
					t.Fatalf("the events ended before %q", want)
				}
				if strings.Contains(line, want) {
					return line
				}
			case <-deadline:
				t.Fatalf("no %q within 30s", want)
			}
		}
	}
	next(`"records":1`) // what the page drew
	write(exp, tp, "k2")
	next("event: record")
	if line := next("data: "); !strings.Contains(line, `"name":"k2"`) {
		t.Errorf("the live record is %s, want k2", line)
	}
	next(`"records":2`)
	if st := exp.Stats(); st.Spooled != 0 {
		t.Errorf("the writer spooled %d records while a page followed its session", st.Spooled)
	}
}

// TestServeSaysItHasNoAuthentication: bound to an address other
// machines reach (only when --listen names it), records serve says it
// has no authentication; on loopback it says nothing of the kind.
func TestServeSaysItHasNoAuthentication(t *testing.T) {
	dir := writeGoldenStore(t)
	for _, c := range []struct {
		listen string
		warns  bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		cmd := recordsProcess(t, "serve", "--dir", dir, "--listen", c.listen)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr := new(lockedBuffer)
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		if err != nil || !strings.Contains(line, "http://") {
			t.Fatalf("--listen %s: printed %q (%v)\n%s", c.listen, line, err, stderr)
		}
		if warns := strings.Contains(stderr.String(), "no authentication"); warns != c.warns {
			t.Errorf("--listen %s: says it has no authentication: %v, want %v\n%s", c.listen, warns, c.warns, stderr)
		}
	}
}
