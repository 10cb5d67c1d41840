package collector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.uber.org/zap"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// The records processor: keep-what-changed in any Collector pipeline. It
// records what it is given under the same rules as the exporter — the
// same Importer — and passes downstream only what is kept: the spans of
// sessions (or, with keep_by: trace, traces) that changed something, each
// carrying what makes it a record again (records.kind, records.seq, the
// session's row on its Resource with records.session.id), so that
// `records pull` can rebuild the store exactly from a backend. A span
// decided within the request that brought it, whose record is the span
// as it came, goes on as that span, moved out of the request (origins.go);
// the others are made spans again from their records (spanbridge.Span). A warm fleet sends nothing
// downstream. With a directory it also records into that store; without
// one it keeps no records, only, in a state directory, what it needs to
// take a batch once across a restart (importer.Config.ForwardOnly).

// ProcessorConfig is the records processor's configuration.
type ProcessorConfig struct {
	// RecordsConfig is how sessions are recorded; Directory, when set,
	// is a store the processor records into as well as handing on.
	RecordsConfig `mapstructure:",squash"`
	// StateDirectory, for a processor without a Directory, is where it
	// keeps what it needs to take a batch sent again once and continue
	// its senders' sessions under their ids across a restart: the
	// sessions in progress, the ids of the spans it handed on within
	// dedup_window, the spans waiting for their parents. Empty means
	// "otelrecords/processor/<component id>" under the user's cache
	// directory. Give each Collector process its own, on storage that
	// outlives the process (a container's volume).
	StateDirectory string `mapstructure:"state_directory"`
}

// Validate checks the recording fields, that max_bytes, which bounds a
// store, comes with a directory, and that a state directory does not.
func (c *ProcessorConfig) Validate() error {
	err := c.RecordsConfig.Validate()
	if c.MaxBytes > 0 && c.Directory == "" {
		err = errors.Join(err, errors.New("max_bytes: bounds a store, and the processor has none without a directory"))
	}
	if c.StateDirectory != "" && c.Directory != "" {
		err = errors.Join(err, errors.New("state_directory: the processor keeps its state in its store when it has a directory; give one or the other"))
	}
	return err
}

// stateDir is where a processor without a directory keeps its state: dir
// when given, else under the user's cache directory, by component id.
func stateDir(dir string, id component.ID) (string, error) {
	if dir != "" {
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("records: no directory, and no default state_directory (%w): set state_directory", err)
	}
	name := strings.NewReplacer("/", "_", string(filepath.Separator), "_").Replace(id.String())
	return filepath.Join(cache, "otelrecords", "processor", name), nil
}

// NewProcessorFactory returns the factory of the records processor, for
// a Collector distribution's processor factories.
func NewProcessorFactory() processor.Factory {
	return processor.NewFactory(componentType, func() component.Config { return &ProcessorConfig{RecordsConfig: defaultRecordsConfig()} },
		processor.WithTraces(createTracesProcessor, component.StabilityLevelAlpha))
}

// createTracesProcessor creates the processor; nothing is opened until a
// session is kept.
func createTracesProcessor(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	c := cfg.(*ProcessorConfig)
	ic, opts, err := c.options()
	if err != nil {
		return nil, err
	}
	p := &recordsProcessor{dir: c.Directory, id: set.ID.String(), ic: ic, opts: opts, set: set.TelemetrySettings,
		fwd: &forwarder{next: next, logger: set.Logger}, logger: set.Logger}
	if c.Directory == "" {
		if p.state, err = stateDir(c.StateDirectory, set.ID); err != nil {
			return nil, err
		}
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.process,
		processorhelper.WithStart(p.start), processorhelper.WithShutdown(p.shutdown),
		// It moves the spans it hands on as they came out of the request.
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}))
}

// recordsProcessor is the component: an importer.Importer whose store
// hands what it is given down the pipeline.
type recordsProcessor struct {
	dir    string
	state  string // without a directory: where it keeps its state
	id     string
	ic     importer.Config
	opts   []importer.Option
	set    component.TelemetrySettings
	fwd    *forwarder
	im     *importer.Importer
	unreg  func() error
	logger *zap.Logger
}

func (p *recordsProcessor) start(context.Context, component.Host) error {
	ic := p.ic
	ic.Forward = p.fwd.forward
	ic.AsReceived = p.fwd.origins.note
	dir := p.dir
	if dir == "" {
		dir, ic.ForwardOnly = p.state, true
	}
	im, err := importer.New(dir, ic, p.opts...)
	if err != nil {
		return err
	}
	if p.dir == "" {
		p.logger.Info("handing kept sessions on; state kept across restarts", zap.String("state_directory", im.Dir()))
	}
	p.im = im
	if p.unreg, err = registerMetrics(p.set.MeterProvider, p.id, im); err != nil {
		im.Shutdown(context.Background())
		return fmt.Errorf("records: metrics: %w", err)
	}
	return nil
}

// process records a batch; what is kept goes downstream as it is written
// (forwarder), not from here, so the batch itself is never passed on: the
// spans handed on as they came are moved out of it while it is in flight.
func (p *recordsProcessor) process(ctx context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	c := p.fwd.origins.convert(td)
	res, err := p.im.Import(ctx, c.batches...)
	p.fwd.origins.done(c)
	switch {
	case err != nil:
		return td, err
	case res.Accepted == 0 && res.Rejected > 0:
		return td, errors.New("records: " + res.Message)
	}
	return td, processorhelper.ErrSkipProcessingData
}

func (p *recordsProcessor) shutdown(ctx context.Context) error {
	if p.im == nil {
		return nil
	}
	var errs []error
	if p.unreg != nil {
		errs = append(errs, p.unreg())
	}
	return errors.Join(append(errs, p.im.Shutdown(ctx))...)
}

// maxRows bounds the session rows a forwarder remembers, to put on the
// Resource of a session's later records: a session kept and quiet for
// longer than it takes 4,096 others to be kept sends its later spans on a
// Resource that carries its id (records.session.id) and nothing more.
const maxRows = 4096

// forwarder turns the entries an Importer writes into spans — the spans
// they were, as they came, where it can (origins) — and hands them to the
// next consumer.
type forwarder struct {
	next    consumer.Traces
	logger  *zap.Logger
	origins origins // the requests in flight, whose spans go on as they came

	mu    sync.Mutex
	rows  map[sessions.SessionID]sessions.Session
	order []sessions.SessionID
	// The scratch of forward, kept from one call to the next (f.mu).
	spans     map[group]ptrace.SpanSlice
	resources map[sessions.SessionID]ptrace.ResourceSpans
	extra     []attribute.KeyValue
	rec       sessions.Stamped[sessions.Record]
	left      []int // the entries handOn left
}

// group is the spans of a session in a scope, as forward hands them on.
type group struct {
	session sessions.SessionID
	scope   instrumentation.Scope
}

// forward hands the records among es on, each a span under its
// session's Resource: the span it was as it came when its request is in
// flight, else one made again from it; rows update the Resource of what
// follows, and other entries (the Importer's bookkeeping) are not
// records.
func (f *forwarder) forward(es []sessions.Entry) error {
	td := ptrace.NewTraces()
	var row sessions.Session
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spans == nil {
		f.spans, f.resources = map[group]ptrace.SpanSlice{}, map[sessions.SessionID]ptrace.ResourceSpans{}
	}
	defer clear(f.spans)
	defer clear(f.resources)
	// The spans of session id in scope, under its Resource; the first
	// group made with room for want spans, the rest of the batch, which
	// is mostly one session's spans in one scope.
	spansOf := func(id sessions.SessionID, scope instrumentation.Scope, want int) ptrace.SpanSlice {
		rs, ok := f.resources[id]
		if !ok {
			rs = td.ResourceSpans().AppendEmpty()
			putResource(rs.Resource(), f.resource(id))
			f.resources[id] = rs
		}
		g := group{id, scope}
		ss, ok := f.spans[g]
		if !ok {
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName(g.scope.Name)
			sc.Scope().SetVersion(g.scope.Version)
			sc.SetSchemaUrl(g.scope.SchemaURL)
			ss = sc.Spans()
			if len(f.spans) == 0 && want > 0 {
				ss.EnsureCapacity(want)
			}
			f.spans[g] = ss
		}
		return ss
	}
	// The entries are the Importer's own encoding of a moment ago: decoded
	// in one pass, without the checks a value from disk needs
	// (importer.DecodeEntry), into one rec kept from call to call.
	rec := &f.rec
	// First the rows, and the records that go on as the spans they were;
	// then what is left, made spans again.
	f.left = f.origins.handOn(es, func(e sessions.Entry) bool {
		if kind, err := importer.DecodeEntry(e, rec, &row); err == nil && kind == "sessions" {
			f.remember(row)
			return true
		}
		return false
	}, spansOf, f.left[:0])
	for n, i := range f.left {
		e := es[i]
		kind, err := importer.DecodeEntry(e, rec, &row)
		switch {
		case errors.Is(err, sessions.ErrNotRecord):
			// A part of a kept session's tally goes on as a span of its
			// own (docs/MAPPING.md §8.6); the rest is the Importer's.
			t, ok, err := tallies.Of(e)
			switch {
			case ok && err != nil:
				f.logger.Warn("a tally the processor wrote does not decode; not handed on", zap.Error(err))
			case ok:
				appendTally(spansOf(t.Session, spanbridge.TallyScope, 0), spanbridge.TallyFields(t, e.Value))
			}
			continue
		case err != nil:
			f.logger.Warn("a record the processor wrote does not decode; not handed on", zap.Error(err))
			continue
		case kind == "sessions":
			f.remember(row)
			continue
		}
		ss := spansOf(rec.Stamp.Session, instrumentation.Scope{Name: rec.Record.Scope.Name, Version: rec.Record.Scope.Version}, len(f.left)-n)
		f.extra = appendRecord(ss, kind, rec, f.extra)
		handedRemade.Add(1)
	}
	if td.SpanCount() == 0 {
		return nil
	}
	return f.next.ConsumeTraces(context.Background(), td)
}

// remember keeps row for the session's later records. f.mu is held.
func (f *forwarder) remember(row sessions.Session) {
	if f.rows == nil {
		f.rows = map[sessions.SessionID]sessions.Session{}
	}
	if _, ok := f.rows[row.ID]; !ok {
		f.order = append(f.order, row.ID)
		if len(f.order) > maxRows {
			delete(f.rows, f.order[0])
			f.order = f.order[1:]
		}
	}
	f.rows[row.ID] = row
}

// resource is the Resource of session id's spans: of its row, or one
// that says only its id. f.mu is held.
func (f *forwarder) resource(id sessions.SessionID) *resource.Resource {
	if r, ok := f.rows[id]; ok {
		return spanbridge.Resource(r)
	}
	return spanbridge.Resource(sessions.Session{ID: id})
}
