// Command recwriter is a writer process for the multi-process and crash
// tests: it records n spans of kind "work" (the first one a change, so the
// session is kept; -changed-at names a later one) through the exporter into a store, acknowledging each
// batch with a ForceFlush and a line "acked <n>" on stdout, then idles, then
// shuts down. Tests start several of these on one store, read beside them,
// and kill them at random points.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
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
	label := flag.String("label", "writer", "session label")
	n := flag.Int("n", 1000, "records to write")
	batch := flag.Int("batch", 100, "ForceFlush (acknowledge) every batch records")
	pause := flag.Duration("pause", 0, "pause after each batch")
	idle := flag.Duration("idle", 0, "idle after writing, before shutting down")
	flushTimeout := flag.Duration("flush-timeout", 30*time.Second, "ForceFlush deadline")
	shutdownTimeout := flag.Duration("shutdown-timeout", 10*time.Second, "Shutdown deadline")
	startAt := flag.String("start", "", "start span i at this RFC 3339 instant plus i microseconds (trace.WithTimestamp), as spans imported from elsewhere carry")
	changedAt := flag.Int("changed-at", 0, "the record that is a change, which keeps the session: those before it are held until it")
	flag.Parse()
	var explicit time.Time
	if *startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, *startAt)
		if err != nil {
			fmt.Fprintln(os.Stderr, "-start:", err)
			os.Exit(2)
		}
		explicit = t
	}

	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { fmt.Fprintln(os.Stderr, "otel:", err) }))
	exp, err := exporter.New(*dir, exporter.WithLabel(*label), exporter.WithMaxQueueSize(1<<22))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
	tr := tp.Tracer("recwriter")
	for i := range *n {
		attrs := []attribute.KeyValue{spanbridge.Kind("work"), attribute.Int("i", i), attribute.String("label", *label)}
		if i == *changedAt {
			attrs = append(attrs, spanbridge.Changed())
		}
		opts := []trace.SpanStartOption{trace.WithAttributes(attrs...)}
		if !explicit.IsZero() {
			at := explicit.Add(time.Duration(i) * time.Microsecond)
			opts = append(opts, trace.WithTimestamp(at))
		}
		_, s := tr.Start(context.Background(), "work", opts...)
		if explicit.IsZero() {
			s.End()
		} else {
			s.End(trace.WithTimestamp(explicit.Add(time.Duration(i)*time.Microsecond + time.Microsecond/2)))
		}
		if (i+1)%*batch == 0 || i == *n-1 {
			ctx, cancel := context.WithTimeout(context.Background(), *flushTimeout)
			err := exp.ForceFlush(ctx)
			cancel()
			if err == nil {
				fmt.Printf("acked %d\n", i+1)
			} else {
				fmt.Printf("unacked %d %v\n", i+1, err)
			}
			time.Sleep(*pause)
		}
	}
	fmt.Printf("ended %d\n", *n)
	time.Sleep(*idle)
	ctx, cancel := context.WithTimeout(context.Background(), *shutdownTimeout)
	defer cancel()
	err = tp.Shutdown(ctx)
	st := exp.Stats()
	fmt.Printf("done written=%d spooled=%d dropped=%d err=%v writeerrors=%d busywaits=%d\n", st.Written, st.Spooled, st.Dropped, err, st.WriteErrors, st.BusyWaits)
}
