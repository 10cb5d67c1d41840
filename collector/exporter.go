package collector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/otelrecords/otelrecords/importer"
)

// recordsExporter is the component: an importer.Importer between Start
// and Shutdown.
type recordsExporter struct {
	dir    string
	id     string // the component's ID, which its metrics carry
	ic     importer.Config
	opts   []importer.Option
	set    component.TelemetrySettings
	logger *zap.Logger
	im     *importer.Importer
	unreg  func() error // unregisters the metrics

	mu       sync.Mutex
	rejected int       // spans rejected since the last log line about them
	saidAt   time.Time // when that line was logged
}

// rejectLogEvery is how often, at most, the exporter logs that it
// rejected spans: a sender sending bad spans all day is said once a
// minute, with their number, not once a batch.
const rejectLogEvery = time.Minute

// start creates the Importer: where the store goes is settled now (a
// directory holding the user's files, a file, a socket, a read-only place
// or one another user could replace fails the start), but nothing is
// created until a session is kept.
func (r *recordsExporter) start(context.Context, component.Host) error {
	im, err := importer.New(r.dir, r.ic, r.opts...)
	if err != nil {
		return err
	}
	r.im = im
	unreg, err := registerMetrics(r.set.MeterProvider, r.id, im)
	if err != nil {
		im.Shutdown(context.Background())
		return fmt.Errorf("records: metrics: %w", err)
	}
	r.unreg = unreg
	r.logger.Info("recording sessions", zap.String("directory", im.Dir()))
	return nil
}

// consume records one batch of the pipeline. It returns nil only once
// every span of a kept session in it is durable (written, or spooled for
// a store another process holds past the export's timeout), and held
// spans are under the retention rules: only then is the batch
// acknowledged. A batch given again (a retry, a queue's replay) is taken
// once. Errors follow the Collector's conventions: a batch of spans none
// of which can ever be recorded is a permanent error; anything else
// (a full disk: the spans refused whole) is retryable.
func (r *recordsExporter) consume(ctx context.Context, td ptrace.Traces) error {
	c := batches(td)
	res, err := r.im.Import(ctx, c.batches...)
	c.release()
	if res.Rejected > 0 {
		r.sayRejected(res)
	}
	switch {
	case err != nil:
		// Retryable: a full disk (nothing of the batch kept), a store
		// another process holds past the timeout, a shutdown under way.
		return err
	case res.Accepted == 0 && res.Rejected > 0:
		// InvalidArgument: the receiver answers HTTP 400 (gRPC
		// InvalidArgument), which a sender does not retry.
		return consumererror.NewPermanent(grpcstatus.Error(codes.InvalidArgument, "records: "+res.Message))
	}
	return nil
}

// sayRejected logs rejected spans, at most once every rejectLogEvery,
// with how many there were since the last line.
func (r *recordsExporter) sayRejected(res importer.Result) {
	r.mu.Lock()
	r.rejected += res.Rejected
	now := time.Now()
	if !r.saidAt.IsZero() && now.Sub(r.saidAt) < rejectLogEvery {
		r.mu.Unlock()
		return
	}
	n := r.rejected
	r.rejected, r.saidAt = 0, now
	r.mu.Unlock()
	r.logger.Warn("rejected spans no record can be made of (logged at most once a minute; counted in otelcol.records.spans.rejected)",
		zap.Int("rejected", n), zap.String("why", res.Message))
}

// shutdown places every waiting span, writes what the sessions keep and
// lets the store go.
func (r *recordsExporter) shutdown(ctx context.Context) error {
	if r.im == nil {
		return nil
	}
	var errs []error
	if r.unreg != nil {
		errs = append(errs, r.unreg())
	}
	return errors.Join(append(errs, r.im.Shutdown(ctx))...)
}
