// Command otlpsender is the sender the Collector tests run against
// otelcol-records: real OpenTelemetry Go SDK providers (one per simulated
// sender process, each its own service.instance.id) behind
// BatchSpanProcessors, exporting through otlptracehttp or otlptracegrpc
// v1.47.0 with the exporters' own retries, and logging every span id the
// exporter got a success for — what a sender was told is stored — and
// every span id it was told failed.
//
// Each span is its own root, of a trace of its own, unless -children asks
// for a child under each; it is a record (records.kind=step) that says
// records.effect=changed once -changed-after has passed since the start
// (0: from the start; negative: never), so that a session is warm first
// and kept later.
//
//	otlpsender -endpoint 127.0.0.1:4318 -proto http -senders 10 -rate 5000 -duration 20s -acked acked.txt
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	var (
		endpoint     = flag.String("endpoint", "127.0.0.1:4318", "the Collector's OTLP endpoint, host:port")
		proto        = flag.String("proto", "http", "http or grpc")
		senders      = flag.Int("senders", 1, "senders simulated: a provider each, with its own service.instance.id")
		prefix       = flag.String("prefix", "sender", "service.instance.id prefix: sender i is PREFIX-i")
		rate         = flag.Float64("rate", 1000, "spans a second, over every sender")
		duration     = flag.Duration("duration", 10*time.Second, "how long to send")
		changedAfter = flag.Duration("changed-after", 0, "spans say records.effect=changed once this has passed; negative: never")
		attrBytes    = flag.Int("attr-bytes", 0, "an attribute of this many bytes on every span")
		children     = flag.Bool("children", false, "a child record under each root")
		clock        = flag.String("clock", "normal", "the senders' clock: normal, ahead (+1h), behind (-1h), epoch (start 1 ns), y3000, backwards (end before start)")
		acked        = flag.String("acked", "", "file the acknowledged span ids go to, one \"traceid spanid effect\" a line")
		failed       = flag.String("failed", "", "file the span ids told failed go to")
		timeout      = flag.Duration("timeout", 10*time.Second, "the exporter's timeout")
		queue        = flag.Int("queue", 1<<16, "each BatchSpanProcessor's queue")
		batchTimeout = flag.Duration("batch-timeout", 200*time.Millisecond, "each BatchSpanProcessor's batch timeout")
	)
	flag.Parse()
	ackLog, err := newIDLog(*acked)
	if err != nil {
		fail(err)
	}
	failLog, err := newIDLog(*failed)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	tps := make([]*sdktrace.TracerProvider, *senders)
	tracers := make([]trace.Tracer, *senders)
	for i := range tps {
		var exp sdktrace.SpanExporter
		switch *proto {
		case "http":
			exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(*endpoint), otlptracehttp.WithInsecure(), otlptracehttp.WithTimeout(*timeout))
		case "grpc":
			exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(*endpoint), otlptracegrpc.WithInsecure(), otlptracegrpc.WithTimeout(*timeout))
		default:
			err = fmt.Errorf("-proto %q: want http or grpc", *proto)
		}
		if err != nil {
			fail(err)
		}
		res := resource.NewSchemaless(attribute.String("service.name", "otlpsender"),
			attribute.String("service.instance.id", fmt.Sprintf("%s-%d", *prefix, i)), attribute.Int("process.pid", os.Getpid()))
		tps[i] = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
			sdktrace.WithBatcher(&logged{SpanExporter: exp, acked: ackLog, failed: failLog},
				sdktrace.WithMaxQueueSize(*queue), sdktrace.WithBatchTimeout(*batchTimeout)))
		tracers[i] = tps[i].Tracer("otlpsender")
	}
	blob := attribute.String("blob", strings.Repeat("x", *attrBytes))
	start := time.Now()
	var made atomic.Int64
	interval := 10 * time.Millisecond
	perTick := *rate * interval.Seconds()
	owed := 0.0
	next := 0
	tick := time.NewTicker(interval)
	for now := range tick.C {
		if now.Sub(start) >= *duration {
			break
		}
		owed += perTick
		changed := *changedAfter >= 0 && now.Sub(start) >= *changedAfter
		for ; owed >= 1; owed-- {
			emit(tracers[next], made.Add(1), changed, *children, *attrBytes > 0, blob, *clock)
			next = (next + 1) % len(tracers)
		}
	}
	tick.Stop()
	var wg sync.WaitGroup
	for _, tp := range tps {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			tp.Shutdown(sctx)
		})
	}
	wg.Wait()
	ackLog.close()
	failLog.close()
	fmt.Printf("made %d spans\n", made.Load())
}

// emit makes the n-th span (and its child, with children) on tr.
func emit(tr trace.Tracer, n int64, changed, children, blob bool, attr attribute.KeyValue, clock string) {
	attrs := []attribute.KeyValue{attribute.String("records.kind", "step"), attribute.Int64("n", n)}
	if changed {
		attrs = append(attrs, attribute.String("records.effect", "changed"))
	}
	if blob {
		attrs = append(attrs, attr)
	}
	start, end := times(clock)
	ctx, root := tr.Start(context.Background(), fmt.Sprint("step ", n), trace.WithAttributes(attrs...), trace.WithTimestamp(start))
	if children {
		_, c := tr.Start(ctx, fmt.Sprint("part ", n), trace.WithAttributes(attribute.String("records.kind", "part")), trace.WithTimestamp(start))
		c.End(trace.WithTimestamp(end))
	}
	root.End(trace.WithTimestamp(end))
}

// times returns a span's start and end on the sender's clock.
func times(clock string) (start, end time.Time) {
	now := time.Now()
	start, end = now.Add(-time.Millisecond), now
	switch clock {
	case "ahead":
		return start.Add(time.Hour), end.Add(time.Hour)
	case "behind":
		return start.Add(-time.Hour), end.Add(-time.Hour)
	case "epoch":
		return time.Unix(0, 1), end
	case "y3000":
		return time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(3000, 1, 1, 0, 0, 1, 0, time.UTC)
	case "backwards":
		return end, start
	}
	return start, end
}

// logged is an exporter that logs the span ids of each export: to acked
// when the Collector answered success, to failed otherwise.
type logged struct {
	sdktrace.SpanExporter
	acked, failed *idLog
}

func (l *logged) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := l.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		l.acked.write(spans)
	} else {
		l.failed.write(spans)
	}
	return err
}

// idLog is a file of span ids, one "traceid spanid effect" a line.
type idLog struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

func newIDLog(path string) (*idLog, error) {
	if path == "" {
		return &idLog{}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &idLog{f: f, w: bufio.NewWriter(f)}, nil
}

func (l *idLog) write(spans []sdktrace.ReadOnlySpan) {
	if l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range spans {
		tid, sid := s.SpanContext().TraceID(), s.SpanContext().SpanID()
		effect := "observed"
		for _, kv := range s.Attributes() {
			if kv.Key == "records.effect" {
				effect = kv.Value.Emit()
			}
		}
		fmt.Fprintf(l.w, "%s %s %s\n", hex.EncodeToString(tid[:]), hex.EncodeToString(sid[:]), effect)
	}
	l.w.Flush() // the line is out before the sender goes on: a kill loses none
}

func (l *idLog) close() {
	if l.w != nil {
		l.w.Flush()
		l.f.Close()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "otlpsender:", err)
	os.Exit(2)
}
