// Command faultwriter is the writer process of the fault tests
// (internal/testkit/proctest, faults_test.go): a host that records spans
// through the exporter while its store's disk fills and empties, while
// another writer shares the store with a keep count, or while it ends
// spans carrying huge attribute values. It prints its exporter's Stats as
// a JSON line "stats {...}" every 200 ms and "done {...}" after Shutdown,
// and the reports otel.Handle receives on stderr, one a line, so that the
// tests see what a user sees; they measure its memory from /proc.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/spanbridge"
)

func main() {
	dir := flag.String("dir", "", "store directory")
	label := flag.String("label", "faultwriter", "session label")
	keep := flag.Int("keep", 0, "keep count (exporter.WithKeepSessions); 0 keeps every session")
	n := flag.Int("n", 0, "spans to end; 0: end them for -duration")
	duration := flag.Duration("duration", 10*time.Second, "how long to end spans when -n is 0")
	rate := flag.Int("rate", 20000, "spans a second, at most")
	attr := flag.Int("attr", 1024, "bytes of the attribute each span carries")
	huge := flag.Int("huge", 0, "bytes of a value every span carries besides (one string, shared)")
	workers := flag.Int("goroutines", 4, "goroutines ending spans")
	flag.Parse()

	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		fmt.Fprintln(os.Stderr, "otel:", strings.ReplaceAll(err.Error(), "\n", " "))
	}))
	opts := []exporter.Option{exporter.WithLabel(*label)}
	if *keep > 0 {
		opts = append(opts, exporter.WithKeepSessions(*keep))
	}
	exp, err := exporter.New(*dir, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("faultwriter")
	// The attribute is a window into random text, a different one for
	// each span, so that the store does not compress it away: the disk
	// fills as a real host's would.
	noise := make([]byte, 1<<20+*attr)
	rand.Read(noise)
	text := base64.StdEncoding.EncodeToString(noise)
	pad := func(i int64) string {
		off := int(i*7919) % (len(text) - *attr)
		return text[off : off+*attr]
	}
	var big string
	if *huge > 0 {
		big = strings.Repeat("h", *huge)
	}

	var next, made atomic.Int64 // the next span's i; spans ended
	stop := make(chan struct{})
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				say("stats", made.Load(), exp.Stats())
			}
		}
	}()

	// The first span is a change, so the session is kept; the rest are
	// changes too unless they carry the huge value (which makes them too
	// large to record, whatever their effect).
	end := func(i int64) {
		attrs := []attribute.KeyValue{spanbridge.Kind("work"), spanbridge.Changed(), attribute.Int64("i", i), attribute.String("label", *label), attribute.String("pad", pad(i))}
		if big != "" && i > 0 {
			attrs = append(attrs, attribute.String("huge", big))
		}
		_, s := tr.Start(context.Background(), "work", trace.WithAttributes(attrs...))
		s.End()
		made.Add(1)
	}
	end(next.Add(1) - 1)
	deadline := time.Now().Add(*duration)
	perTick := max(*rate/100, 1)
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				for range max(perTick / *workers, 1) {
					i := next.Add(1) - 1
					if (*n > 0 && i >= int64(*n)) || (*n == 0 && time.Now().After(deadline)) {
						return
					}
					end(i)
				}
				<-tick.C
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := exp.ForceFlush(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "forceflush:", err)
	}
	close(stop)
	<-printed
	if err := tp.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown:", err)
	}
	say("done", made.Load(), exp.Stats())
}

// say prints a line "what {stats as JSON, with made: spans ended}".
func say(what string, made int64, s exporter.Stats) {
	b, _ := json.Marshal(struct {
		Made int64
		exporter.Stats
	}{made, s})
	fmt.Printf("%s %s\n", what, b)
}
