package main

import (
	"context"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// pretendClock is the time of a run made with -clock: it starts at a
// given instant and moves only when the build works (sleep), so what the
// run records is the same on every machine and every time. docs/CLI.md's
// sample outputs are made so, and checked by cmd/records/docs_test.go.
//
// Real work never takes its nominal time twice in a row, and three runs
// that took exactly the same time would show nothing to compare: each
// step takes its nominal time give or take up to a third, drawn from a
// generator seeded by the start, as a real machine's timings vary from
// run to run.
type pretendClock struct {
	at   time.Time
	vary *rand.Rand
}

func newPretendClock(start time.Time) *pretendClock {
	seed := uint64(start.UnixNano())
	return &pretendClock{at: start, vary: rand.New(rand.NewPCG(seed, seed>>32))}
}

// sleep moves the clock by d, varied.
func (c *pretendClock) sleep(d time.Duration) {
	c.at = c.at.Add(time.Duration(float64(d) * (2.0/3 + c.vary.Float64()*2/3)))
}

// pretendTracer gives every span and event the pretend clock's time: the
// SDK stamps them with time.Now unless told otherwise
// (trace.WithTimestamp), and the exporter records the times it is given.
// The build runs on one goroutine, so the clock needs no lock.
type pretendTracer struct {
	trace.Tracer
	clock *pretendClock
}

func (t pretendTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, span := t.Tracer.Start(ctx, name, append(opts, trace.WithTimestamp(t.clock.at))...)
	return ctx, pretendSpan{Span: span, clock: t.clock}
}

// pretendSpan ends, and takes events and errors, at the pretend clock's
// time.
type pretendSpan struct {
	trace.Span
	clock *pretendClock
}

func (s pretendSpan) End(opts ...trace.SpanEndOption) {
	s.Span.End(append(opts, trace.WithTimestamp(s.clock.at))...)
}

func (s pretendSpan) AddEvent(name string, opts ...trace.EventOption) {
	s.Span.AddEvent(name, append(opts, trace.WithTimestamp(s.clock.at))...)
}

func (s pretendSpan) RecordError(err error, opts ...trace.EventOption) {
	s.Span.RecordError(err, append(opts, trace.WithTimestamp(s.clock.at))...)
}
