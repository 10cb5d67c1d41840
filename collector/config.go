package collector

import (
	"errors"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelrecords/otelrecords/importer"
	"github.com/otelrecords/otelrecords/sessions"
)

// Config is the records exporter's configuration.
type Config struct {
	// RecordsConfig is what the exporter and the processor share: where
	// and how sessions are recorded.
	RecordsConfig `mapstructure:",squash"`

	// TimeoutConfig bounds one export: a store another process holds
	// is waited for until then, and its records spooled after.
	TimeoutConfig exporterhelper.TimeoutConfig `mapstructure:",squash"`
	// QueueConfig is the Collector's sending queue, off unless configured:
	// with it on, the pipeline is acknowledged once a batch is queued (in
	// memory, or on disk with a storage extension: see the package doc).
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// BackOffConfig retries a batch the store refused (a full disk):
	// on by default, since a batch given again is taken once.
	BackOffConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`
}

// RecordsConfig is where and how sessions are recorded: the exporter's
// and the processor's in common.
type RecordsConfig struct {
	// Directory is the store's directory: the directory is the store,
	// created when missing; an existing one holding anything but a
	// store's own files fails Start, naming a subdirectory to use. For
	// the exporter, empty means the library's default store
	// ($OTELRECORDS_DIR, else the user's cache directory); for the
	// processor, no store: it only hands on.
	Directory string `mapstructure:"directory"`
	// KeepBy is the retention rule: "session" (the default: a session is
	// kept from its first change on, with what it held before) or "trace"
	// (each trace is kept when one of its records changed something, for
	// servers: importer.KeepByTrace).
	KeepBy string `mapstructure:"keep_by"`
	// MaxBytes bounds the store's size in bytes (importer.WithMaxBytes);
	// 0 leaves it unbounded.
	MaxBytes int64 `mapstructure:"max_bytes"`
	// Level is how much is recorded: off, basic or full.
	Level string `mapstructure:"level"`
	// Marks is the marks policy for spans that say nothing of records:
	// enclosing, all or none.
	Marks string `mapstructure:"marks"`
	// SessionTimeout ends a sender's session after this long without a
	// span: OTLP has no "process exited".
	SessionTimeout time.Duration `mapstructure:"session_timeout"`
	// DecisionWait is how long a trace is held for its root before it is
	// recorded anyway. A trace whose root arrives is recorded a moment
	// (importer.DefaultDecisionGrace) after it, not after DecisionWait.
	DecisionWait time.Duration `mapstructure:"decision_wait"`
	// MaxHeldBytes bounds, over every sender, what the exporter holds in
	// memory that no store has yet (spans waiting for their parents,
	// sessions and traces that have not changed anything yet): past it
	// the oldest go first, across senders (importer.Config.HeldBytes).
	// Keep it well under a memory_limiter's limit.
	MaxHeldBytes int64 `mapstructure:"max_held_bytes"`
	// DedupWindow is how long a span taken is recognised when it is
	// delivered again (a sender's retry, a sending queue's replay after an
	// outage or a restart), and stored once: whatever the session timeout,
	// a span sent again within it is not stored twice, and one of a
	// session that ended joins that session again
	// (importer.Config.DedupWindow). Keep it at least the
	// retry_on_failure.max_elapsed_time of the senders and of any
	// Collector in front.
	DedupWindow time.Duration `mapstructure:"dedup_window"`
	// DedupMaxBytes bounds the memory recognising spans takes, over every
	// sender (16 to 32 bytes a span): past it the oldest are forgotten
	// before the window passes (importer.Config.DedupBytes).
	DedupMaxBytes int64 `mapstructure:"dedup_max_bytes"`
}

// Validate checks every field, so that a mistyped configuration stops the
// Collector at start rather than record something else.
func (c *RecordsConfig) Validate() error {
	var errs []error
	if _, err := importer.ParseKeepBy(c.KeepBy); err != nil {
		errs = append(errs, fmt.Errorf("keep_by: %w", err))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("max_bytes: %d is negative (0 leaves the store unbounded)", c.MaxBytes))
	}
	if _, err := sessions.ParseLevel(c.Level); err != nil {
		errs = append(errs, fmt.Errorf("level: %w", err))
	}
	if _, err := importer.ParseMarks(c.Marks); err != nil {
		errs = append(errs, fmt.Errorf("marks: %w", err))
	}
	if c.SessionTimeout <= 0 {
		errs = append(errs, fmt.Errorf("session_timeout: %v must be positive", c.SessionTimeout))
	}
	if c.DecisionWait <= 0 {
		errs = append(errs, fmt.Errorf("decision_wait: %v must be positive", c.DecisionWait))
	}
	if c.MaxHeldBytes <= 0 || c.MaxHeldBytes > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("max_held_bytes: %d must be positive and under 2 GiB", c.MaxHeldBytes))
	}
	if c.DedupWindow <= 0 || c.DedupWindow > importer.MaxDedupWindow {
		errs = append(errs, fmt.Errorf("dedup_window: %v must be positive and at most %v", c.DedupWindow, importer.MaxDedupWindow))
	}
	if c.DedupMaxBytes < 1<<20 || c.DedupMaxBytes > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("dedup_max_bytes: %d must be at least 1 MiB and under 2 GiB", c.DedupMaxBytes))
	}
	return errors.Join(errs...)
}

// options turns the configuration into the library's options and the
// Importer's configuration.
func (c *RecordsConfig) options() (importer.Config, []importer.Option, error) {
	ic := importer.Config{SessionTimeout: c.SessionTimeout, DecisionWait: c.DecisionWait, HeldBytes: int(c.MaxHeldBytes),
		DedupWindow: c.DedupWindow, DedupBytes: int(c.DedupMaxBytes)}
	level, err := sessions.ParseLevel(c.Level)
	if err != nil {
		return ic, nil, err
	}
	marks, err := importer.ParseMarks(c.Marks)
	if err != nil {
		return ic, nil, err
	}
	opts := []importer.Option{importer.WithLevel(level), importer.WithMarks(marks)}
	if c.MaxBytes > 0 {
		opts = append(opts, importer.WithMaxBytes(c.MaxBytes))
	}
	keepBy, err := importer.ParseKeepBy(c.KeepBy)
	if err != nil {
		return ic, nil, err
	}
	return ic, append(opts, importer.WithKeepBy(keepBy)), nil
}
