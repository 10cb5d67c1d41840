// Package workload is what every figure of the benchmark suite shares: the
// span the figures record, the record kind it becomes, and the Badger
// options of the raw-Badger references. The benchmarks (package bench,
// behind the build tag "bench") and the child programs under bench/cmd
// import it, so a figure and its reference can never drift apart.
package workload

import (
	"context"
	"strconv"

	"github.com/dgraph-io/badger/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// Kind is the record kind every benchmark span carries.
const Kind = "bench"

// SpanName is the name of every benchmark span.
const SpanName = "lookup artifact"

// Attribute keys of the benchmark span, besides records.kind.
const (
	KeyKey = attribute.Key("bench.key")
	NKey   = attribute.Key("bench.n")
	HitKey = attribute.Key("bench.hit")
)

// Attrs returns the four attributes of the benchmark span: its kind and
// three ordinary ones (a string, an int and a bool), the shape of a cache
// lookup. i varies the values, so records differ as they do in a real
// program.
func Attrs(i int) []attribute.KeyValue {
	return []attribute.KeyValue{
		spanbridge.Kind(Kind),
		KeyKey.String("sha256:" + strconv.Itoa(1_000_000_000+i)),
		NKey.Int(i),
		HitKey.Bool(i%2 == 0),
	}
}

// Options returns n span start options, the i-th carrying Attrs(i): the
// CPU figures cycle through them, so records differ from span to span as
// in a real program while the loop builds no attributes of its own.
func Options(n int) []trace.SpanStartOption {
	opts := make([]trace.SpanStartOption, n)
	for i := range opts {
		opts[i] = trace.WithAttributes(Attrs(i)...)
	}
	return opts
}

// Span starts and ends one benchmark span with the given start options.
func Span(ctx context.Context, tr trace.Tracer, opts ...trace.SpanStartOption) {
	_, s := tr.Start(ctx, SpanName, opts...)
	s.End()
}

// BadgerOptions returns the options package badgerstore opens Badger with
// (badgerstore/options.go), so that the raw-Badger references of figures 4,
// 5 and 8 run on the same footing as the store. badgerstore does not export
// them; keep the two in step.
func BadgerOptions(dir string, readOnly bool) badger.Options {
	return badger.DefaultOptions(dir).
		WithReadOnly(readOnly).
		WithLogger(nil).
		WithMemTableSize(1 << 20).
		WithNumMemtables(5).
		WithBlockSize(16 << 10).
		WithValueThreshold(128 << 10).
		WithBaseTableSize(512 << 10).
		WithNumLevelZeroTables(3).
		WithNumLevelZeroTablesStall(100).
		WithValueLogFileSize(16 << 20).
		WithBlockCacheSize(1 << 20).
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		WithNumVersionsToKeep(1).
		WithDetectConflicts(false).
		WithMetricsEnabled(false)
}
