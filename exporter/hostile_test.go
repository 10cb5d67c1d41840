package exporter_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// Hostile input (issue 4, item 4): what a program may throw at the
// exporter, and what a host's file system may do under it. Each test says
// the outcome RELIABILITY.md documents; in every one the host keeps
// running, and what ForceFlush acknowledged is in the store.

// hostileProvider is newProvider with TracerProvider options of its own.
func hostileProvider(t *testing.T, dir string, tpOpts []sdktrace.TracerProviderOption, opts ...exporter.Option) *provider {
	t.Helper()
	exp, err := exporter.New(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tpOpts = append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "hostile")))}, tpOpts...)
	tp := sdktrace.NewTracerProvider(tpOpts...)
	return &provider{TracerProvider: tp, exp: exp, tr: tp.Tracer("hostile")}
}

// flush calls ForceFlush and fails the test on error.
func (p *provider) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.exp.ForceFlush(ctx); err != nil {
		t.Fatalf("ForceFlush: %v", err)
	}
}

// flushFails calls ForceFlush, which must fail, and returns its error.
func (p *provider) flushFails(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := p.exp.ForceFlush(ctx)
	if err == nil {
		t.Fatal("ForceFlush succeeded")
	}
	return err
}

// flushResumes calls ForceFlush until it succeeds (the exporter retries a
// failed write, backing off), within a bound.
func (p *provider) flushResumes(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := p.exp.ForceFlush(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("writing did not resume: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitReports waits (a bounded time) for the handler to get an error
// holding s, and returns those it got. A failure ForceFlush returns goes
// to its caller; the exporter reports it through otel.Handle when it
// retries the write on its own, a moment later.
func awaitReports(t *testing.T, e *testsupport.Errors, s string) []error {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got := reportsOf(e, s); len(got) > 0 {
			return got
		}
	}
	return nil
}

// readWaiting is readAll for a store a writer may be retrying to open:
// it waits for its turn, as the records command does.
func readWaiting(t *testing.T, dir string) (*sessions.Records, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := badgerstore.OpenWait(ctx, dir, nil, badgerstore.WithReadOnly())
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return sessions.NewRecords(st), func() { st.Close() }
}

// reportsOf returns the errors the handler got whose text holds s.
func reportsOf(e *testsupport.Errors, s string) []error {
	var out []error
	for _, err := range e.All() {
		if strings.Contains(err.Error(), s) {
			out = append(out, err)
		}
	}
	return out
}

// TestHostileInvalidKinds: a span whose records.kind is empty, "sessions",
// holds 0x00, or is 10 KiB long is recorded as a mark carrying the kind
// it gave (cut to 256 bytes) in records.invalid_kind; the problem is
// reported once through otel.Handle and counted in Stats.Problems.
func TestHostileInvalidKinds(t *testing.T) {
	handled := captureErrors(t)
	dir := filepath.Join(t.TempDir(), "store")
	p := newProvider(t, dir)
	kinds := map[string]string{
		"empty":    "",
		"reserved": "sessions",
		"nul":      "auto\x00tune",
		"10 KiB":   strings.Repeat("k", 10<<10),
	}
	for name, kind := range kinds {
		p.do("span "+name, spanbridge.Kind(kind))
	}
	p.do("keep", spanbridge.Kind("compile"), spanbridge.Changed())
	p.flush(t)
	if got := p.exp.Stats().Problems; got != int64(len(kinds)) {
		t.Errorf("Stats.Problems = %d, want %d", got, len(kinds))
	}
	p.shutdown(t)
	if got := reportsOf(handled, "invalid record kind"); len(got) != 1 {
		t.Errorf("reports of invalid kinds: %v, want exactly one", got)
	}

	r, done := readAll(t, dir)
	defer done()
	marks := map[string]string{}
	for rec, err := range r.All(sessions.MarksKind) {
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rec.Record.Attributes.Get(string(spanbridge.InvalidKindKey))
		marks[rec.Record.Name] = v.AsString()
	}
	for name, kind := range kinds {
		want := kind
		if len(want) > 256 {
			want = want[:256]
		}
		if got, ok := marks["span "+name]; !ok || got != want {
			t.Errorf("span %s: mark with invalid_kind %q (found %v), want %q", name, got, ok, want)
		}
	}
}

// TestHostileHugeAttribute: a record larger than sessions.MaxRecordSize
// (here a span with a 16 MiB attribute, over Badger's largest value) is
// dropped when it is recorded, counted in Stats.TooLarge, and reported
// once; being a change, it still keeps the session. Every other record is
// written — before this, the oversized record failed its batch at every
// flush, and every record after it stayed queued for ever — and one of 10
// MiB, within the limit, reads back whole.
func TestHostileHugeAttribute(t *testing.T) {
	handled := captureErrors(t)
	dir := filepath.Join(t.TempDir(), "store")
	p := newProvider(t, dir)
	huge := strings.Repeat("x", 16<<20)
	large := strings.Repeat("y", 10<<20)

	p.do("before", spanbridge.Kind("compile"))
	p.do("huge", spanbridge.Kind("compile"), spanbridge.Changed(), attribute.String("source", huge))
	p.do("huge again", spanbridge.Kind("compile"), attribute.String("source", huge))
	p.do("large", spanbridge.Kind("compile"), attribute.String("source", large))
	p.do("after", spanbridge.Kind("compile"))
	p.flush(t)
	st := p.exp.Stats()
	if st.TooLarge != 2 || st.Pending != 0 {
		t.Errorf("Stats: TooLarge %d, Pending %d; want 2, 0", st.TooLarge, st.Pending)
	}
	p.shutdown(t)
	if got := reportsOf(handled, "too large"); len(got) != 1 {
		t.Errorf("reports of records too large: %v, want exactly one", got)
	}

	r, done := readAll(t, dir)
	defer done()
	if got := countSessions(t, r); len(got) != 1 {
		t.Errorf("%d sessions, want the one the dropped change kept", len(got))
	}
	got := map[string]int{}
	for rec, err := range r.All("compile") {
		if err != nil {
			t.Fatal(err)
		}
		v, _ := rec.Record.Attributes.Get("source")
		got[rec.Record.Name] = len(v.AsString())
	}
	want := map[string]int{"before": 0, "large": len(large), "after": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records (name: source length) = %v, want %v", got, want)
	}
}

// TestHostileManyAttributes: a span with 10,000 attributes. The SDK keeps
// 128 attributes of a span by default (sdktrace.SpanLimits), its kind and
// effect among them, and the record holds what reaches the exporter: 126;
// with the limit raised, all 10,000 are recorded and read back.
func TestHostileManyAttributes(t *testing.T) {
	for _, limit := range []int{0, -1} { // 0: the SDK's default; -1: none
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			captureErrors(t)
			dir := filepath.Join(t.TempDir(), "store")
			var tpOpts []sdktrace.TracerProviderOption
			want := sdktrace.DefaultAttributeCountLimit - 2 // kind and effect are not stored
			if limit != 0 {
				tpOpts = append(tpOpts, sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
					AttributeCountLimit: limit, AttributeValueLengthLimit: -1, EventCountLimit: -1,
					LinkCountLimit: -1, AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1,
				}))
				want = 10_000
			}
			p := hostileProvider(t, dir, tpOpts)
			attrs := make([]attribute.KeyValue, 10_000)
			for i := range attrs {
				attrs[i] = attribute.Int(fmt.Sprintf("a%05d", i), i)
			}
			_, s := p.tr.Start(context.Background(), "wide", trace.WithAttributes(spanbridge.Kind("wide"), spanbridge.Changed()))
			s.SetAttributes(attrs...)
			s.End()
			p.flush(t)
			p.shutdown(t)

			r, done := readAll(t, dir)
			defer done()
			n := 0
			for rec, err := range r.All("wide") {
				if err != nil {
					t.Fatal(err)
				}
				n = len(rec.Record.Attributes)
			}
			if n != want {
				t.Errorf("%d attributes recorded, want %d", n, want)
			}
		})
	}
}

// TestHostileNonUTF8: strings that are not UTF-8 — a kind, a span name,
// attribute keys and values, an event name — are stored as the bytes they
// are, and read back unchanged (docs/FORMAT.md: the format does not
// require UTF-8).
func TestHostileNonUTF8(t *testing.T) {
	captureErrors(t)
	dir := filepath.Join(t.TempDir(), "store")
	p := newProvider(t, dir)
	const (
		kind = "bad\xffkind"
		name = "span \xc3\x28 \xff"
		key  = "key \xfe"
		val  = "\xff\x00value\x80"
		ev   = "event \xe2\x82"
	)
	_, s := p.tr.Start(context.Background(), name, trace.WithAttributes(spanbridge.Kind(kind), spanbridge.Changed(),
		attribute.String(key, val), attribute.StringSlice("list", []string{"\xff", "ok", "\xc0\x80"})))
	s.AddEvent(ev, trace.WithAttributes(attribute.String(key, val)))
	s.End()
	p.flush(t)
	p.shutdown(t)

	r, done := readAll(t, dir)
	defer done()
	found := 0
	for rec, err := range r.All(kind) {
		if err != nil {
			t.Fatal(err)
		}
		found++
		got := rec.Record
		v, _ := got.Attributes.Get(key)
		list, _ := got.Attributes.Get("list")
		if got.Name != name || v.AsString() != val || fmt.Sprintf("%q", list.Any()) != fmt.Sprintf("%q", []string{"\xff", "ok", "\xc0\x80"}) {
			t.Errorf("read back name %q, %q=%q, list %q", got.Name, key, v.AsString(), list.Any())
		}
		if len(got.Events) != 1 || got.Events[0].Name != ev {
			t.Errorf("read back events %+v", got.Events)
		} else if ev, _ := got.Events[0].Attributes.Get(key); ev.AsString() != val {
			t.Errorf("read back event attribute %q", ev.AsString())
		}
	}
	if found != 1 || r.Skipped() != 0 {
		t.Errorf("%d records of kind %q, %d skipped; want 1, 0", found, kind, r.Skipped())
	}
}

// TestHostilePendingBudget: a pending budget of 0 and of 1 byte holds
// nothing before the session's first change (every observed record is
// evicted at once, and counted); the change and what follows are written.
func TestHostilePendingBudget(t *testing.T) {
	for _, budget := range []int{0, 1} {
		t.Run(fmt.Sprintf("%d bytes", budget), func(t *testing.T) {
			captureErrors(t)
			dir := filepath.Join(t.TempDir(), "store")
			p := newProvider(t, dir, exporter.WithPendingBudget(budget))
			for i := range 5 {
				p.do(fmt.Sprintf("observed %d", i), spanbridge.Kind("lookup"))
			}
			p.flush(t)
			if st := p.exp.Stats(); st.Held != 0 || st.HeldBytes != 0 || st.Evicted != 5 {
				t.Errorf("before the change: Held %d, HeldBytes %d, Evicted %d; want 0, 0, 5", st.Held, st.HeldBytes, st.Evicted)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the store exists before the session changed anything")
			}
			p.do("change", spanbridge.Kind("compile"), spanbridge.Changed())
			p.do("after", spanbridge.Kind("lookup"))
			p.shutdown(t)

			r, done := readAll(t, dir)
			defer done()
			if got := names(t, r, "lookup"); fmt.Sprint(got) != "[after]" {
				t.Errorf("lookup records %v, want [after]", got)
			}
			if got := names(t, r, "compile"); fmt.Sprint(got) != "[change]" {
				t.Errorf("compile records %v, want [change]", got)
			}
		})
	}
}

// TestHostileStoreIsAFile: the store path comes to name a file after New
// (which refuses one at once). Writing fails with an error naming the
// path, ForceFlush returns it, it is reported once; the records stay
// queued, and are written once the path is free.
func TestHostileStoreIsAFile(t *testing.T) {
	handled := captureErrors(t)
	dir := filepath.Join(t.TempDir(), "store")
	p := newProvider(t, dir)
	if err := os.WriteFile(dir, []byte("not a store"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.do("first", spanbridge.Kind("compile"), spanbridge.Changed())
	err := p.flushFails(t)
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("ForceFlush error %q does not name %s", err, dir)
	}
	if st := p.exp.Stats(); st.WriteErrors == 0 {
		t.Errorf("Stats.WriteErrors = 0; want the failure counted")
	}
	if got := awaitReports(t, handled, dir); len(got) != 1 {
		t.Errorf("reports naming %s: %v, want one", dir, got)
	}

	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	p.do("second", spanbridge.Kind("compile"))
	p.flushResumes(t)
	p.shutdown(t)
	r, done := readAll(t, dir)
	defer done()
	if got := names(t, r, "compile"); fmt.Sprint(got) != "[first second]" {
		t.Errorf("records %v, want [first second]", got)
	}
}

// TestHostileReadOnlyStore: the store's file system turns read-only (as
// root, whom permission bits do not stop, by remounting a tmpfs read-only;
// as another user, by chmod 0500). A writer's flush fails with the file
// system's error and its records stay queued; a reader still reads the
// store; once the file system is writable again, the queued records are
// written.
func TestHostileReadOnlyStore(t *testing.T) {
	handled := captureErrors(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	dir := filepath.Join(mnt, "store")
	asRoot := os.Geteuid() == 0
	if asRoot {
		testsupport.MountTmpfs(t, mnt, "128m")
	}
	first := newProvider(t, dir)
	first.do("first session", spanbridge.Kind("compile"), spanbridge.Changed())
	first.shutdown(t)

	makeReadOnly := func(ro bool) {
		switch {
		case asRoot && ro:
			testsupport.Remount(t, mnt, "ro")
		case asRoot:
			testsupport.Remount(t, mnt, "rw")
		case ro:
			os.Chmod(dir, 0o500)
		default:
			os.Chmod(dir, 0o700)
		}
	}
	makeReadOnly(true)
	t.Cleanup(func() { makeReadOnly(false) })

	p := newProvider(t, dir)
	p.do("second session", spanbridge.Kind("compile"), spanbridge.Changed())
	err := p.flushFails(t)
	t.Logf("ForceFlush on a read-only store: %v", err)
	if len(awaitReports(t, handled, dir)) == 0 {
		t.Errorf("the failure was not reported through otel.Handle")
	}
	if st := p.exp.Stats(); st.WriteErrors == 0 {
		t.Errorf("Stats.WriteErrors = 0; want the failure counted")
	}
	r, done := readWaiting(t, dir) // a reader still reads it
	if got := names(t, r, "compile"); fmt.Sprint(got) != "[first session]" {
		t.Errorf("reading the read-only store: %v", got)
	}
	done()

	makeReadOnly(false)
	p.flushResumes(t)
	p.shutdown(t)
	r, done = readAll(t, dir)
	defer done()
	if got := names(t, r, "compile"); fmt.Sprint(got) != "[first session second session]" {
		t.Errorf("records %v, want both sessions'", got)
	}
}

// TestHostileFullFilesystem: the store's file system is full. Badger
// writes through memory maps, and a write to one on a full file system
// raises SIGBUS, which ends the process; so the store refuses to open, or
// to write, with an error matching badgerstore.ErrNoSpace while the free
// space is short, the records stay queued, and the host keeps running.
// Once there is room again (the tmpfs remounted bigger, then a filler
// file deleted), writing resumes and every queued record is written.
func TestHostileFullFilesystem(t *testing.T) {
	handled := captureErrors(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "8m")
	dir := filepath.Join(mnt, "store")
	p := newProvider(t, dir)

	// 8 MiB: too little to open.
	for i := range 100 {
		p.do(fmt.Sprintf("full %d", i), spanbridge.Kind("compile"), spanbridge.Changed(), attribute.String("pad", strings.Repeat("p", 1000)))
	}
	err := p.flushFails(t)
	t.Logf("ForceFlush with 8 MiB: %v", err)
	if !errors.Is(err, badgerstore.ErrNoSpace) {
		t.Errorf("ForceFlush on a full file system = %v, want an error matching badgerstore.ErrNoSpace", err)
	}
	if got := awaitReports(t, handled, "free space"); len(got) != 1 {
		t.Errorf("reports of the full file system: %v, want one", got)
	}

	// Room again: everything queued is written.
	testsupport.Remount(t, mnt, "size=256m")
	p.flushResumes(t)

	// Full again while the writer runs: a write is refused, not crashed.
	filler := testsupport.Fill(t, mnt, 1<<20)
	for i := range 100 {
		p.do(fmt.Sprintf("refilled %d", i), spanbridge.Kind("compile"), attribute.String("pad", strings.Repeat("p", 1000)))
	}
	err = p.flushFails(t)
	t.Logf("ForceFlush with 1 MiB free: %v", err)
	if !errors.Is(err, badgerstore.ErrNoSpace) {
		t.Errorf("ForceFlush with 1 MiB free = %v, want an error matching badgerstore.ErrNoSpace", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p.flushResumes(t)
	p.shutdown(t)

	r, done := readAll(t, dir)
	defer done()
	if got := names(t, r, "compile"); len(got) != 200 {
		t.Errorf("%d records in the store, want 200", len(got))
	}
}
