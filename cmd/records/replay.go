package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/otelrecords/otelrecords/cmd/records/internal/otlpenv"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
)

// defaultReplayTimeout bounds how long one batch may take to be accepted,
// retries included. The OTLP exporters' own default retries for a minute;
// a person at a terminal who mistyped a port should hear about it sooner.
const defaultReplayTimeout = 30 * time.Second

type replayFlags struct {
	endpoint string
	protocol string
	sessions []string
	insecure bool
	timeout  time.Duration
	service  string
	cursor   string
}

func (a *app) replayCommand() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Send stored sessions to an OpenTelemetry backend over OTLP",
		Long: `Send the records of the store to an OpenTelemetry backend (a Collector,
Jaeger, ...) over OTLP, as the spans they were: each record with its
original trace, span and parent ids, name, attributes, status and events,
starting at its session's start plus its offset and lasting its wall time;
marks too. Each session is sent as one Resource: the Resource attributes its
process had, plus records.session.id, records.session.label, process.pid,
os.type and host.arch, and the session row as stored. Every span carries
records.kind and records.seq, and what else a span has no place for
(records.effect=changed, records.inputs): records pull reads a replayed
store back from Jaeger exactly (docs/FORMAT.md §10).

Replay is deterministic: sending a session twice sends the same spans
again, with the same ids, and a backend stores them twice (Jaeger's query
service then shows exact duplicates once; others may show both). Send each
record once: --cursor FILE remembers which records were sent — by
session, the seqs the backend accepted — and a run sends only the records
FILE does not name (all of them when FILE does not exist yet), a session
at a time, whatever order they were written in: a session that started
first and was kept after a later one was sent, or records a running
session wrote since, go with the next run. After each session the backend
accepted, FILE is rewritten (a temporary file, renamed over it), so it
never names a record not sent. Run it after each build, or from cron: a
run that fails part way says how many records remain, and the next run
sends them. A cursor written by an older records (one session id) is
read as "every record of that session and the older ones was sent".

The connection uses TLS unless --insecure (or the standard
OTEL_EXPORTER_OTLP_INSECURE=true) says otherwise. Headers (an API key,
say) come from the standard environment variables OTEL_EXPORTER_OTLP_HEADERS
or OTEL_EXPORTER_OTLP_TRACES_HEADERS, never from the command line, and are
never printed; a CA certificate and client certificates come from
OTEL_EXPORTER_OTLP_CERTIFICATE and its kin. Without --endpoint, the
endpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
OTEL_EXPORTER_OTLP_ENDPOINT.

A busy backend is retried as the OTLP exporters do, with backoff, for at
most --timeout per batch; when nothing accepts the spans in that time the
command says so and exits 1. Progress is shown on standard error when it
is a terminal.`,
		Example: `  records replay --endpoint collector.example.com:4317
  records replay --endpoint 127.0.0.1:4318 --protocol http --insecure
  records replay --endpoint 127.0.0.1:4317 --insecure --session 1735787045006000000
  records replay --endpoint collector.example.com:4317 --cursor ~/.cache/otelrecords/sent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options()
			if err != nil {
				return err
			}
			newExporter, err := f.exporter()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return a.read(cmd, func(r *sessions.Records) error {
				return f.run(ctx, cmd, r, newExporter, o)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.endpoint, "endpoint", "",
		"the OTLP receiver, `host:port` (4317 for grpc, 4318 for http), or a URL (https://host:port)")
	fl.StringVar(&f.protocol, "protocol", "grpc", "the OTLP transport: `grpc` or http (protobuf over HTTP)")
	fl.StringArrayVar(&f.sessions, "session", nil, "send only the session with this `id` (repeatable)")
	fl.BoolVar(&f.insecure, "insecure", false, "send without TLS (plain gRPC or http://)")
	fl.DurationVar(&f.timeout, "timeout", defaultReplayTimeout,
		"how long one batch may take to be accepted, retries included")
	fl.StringVar(&f.service, "service", "", "replace every session's service.name with this `name`")
	fl.StringVar(&f.cursor, "cursor", "", "send only the records this `file` does not name as sent, and name each one sent in it")
	return cmd
}

// options checks the flags that narrow the replay.
func (f *replayFlags) options() (replay.Options, error) {
	var o replay.Options
	for _, s := range f.sessions {
		id, err := parseSessionID(s)
		if err != nil {
			return o, usageError{Err: fmt.Errorf("--session %q: %w", s, err)}
		}
		o.Sessions = append(o.Sessions, id)
	}
	if f.timeout <= 0 {
		return o, usageError{Err: errors.New("--timeout must be positive")}
	}
	if f.cursor != "" && len(f.sessions) > 0 {
		return o, usageError{Err: errors.New("give --cursor or --session, not both: the cursor picks the sessions")}
	}
	o.Service = f.service
	return o, nil
}

// exporter checks the flags that say where to send, and the OTLP
// environment (otlpenv, which records pull reads too), and returns how to
// make the exporter. Making it waits for the store to open, so a missing
// store is reported before anything dials out. The exporter reads the
// environment again itself (endpoint, headers, certificates): what it is
// given here is what the flags say.
func (f *replayFlags) exporter() (func(context.Context) (*otlptrace.Exporter, error), error) {
	env, err := otlpenv.Read()
	if err != nil {
		return nil, err
	}
	if f.endpoint == "" && env.Endpoint == "" {
		return nil, usageError{Err: errors.New("give the OTLP receiver with --endpoint host:port")}
	}
	isURL := strings.Contains(f.endpoint, "://")
	if isURL {
		u, err := url.Parse(f.endpoint)
		switch {
		case err != nil:
			return nil, usageError{Err: fmt.Errorf("--endpoint: %w", err)}
		case u.User != nil:
			// An endpoint is printed in messages; credentials must not be.
			return nil, usageError{Err: errors.New("--endpoint must not hold credentials: give them as headers in OTEL_EXPORTER_OTLP_HEADERS")}
		case u.Scheme == "http" && !f.insecure:
			return nil, usageError{Err: errors.New("--endpoint http://... sends without TLS: use https://, or say so with --insecure")}
		case u.Scheme != "http" && u.Scheme != "https":
			return nil, usageError{Err: fmt.Errorf("--endpoint: unknown scheme %q (want http or https)", u.Scheme)}
		}
	}
	// Retry as the exporters do (exponential backoff, honouring a
	// receiver's throttling hints), but within --timeout, so that nothing
	// listening ends in an error rather than a minute of silence.
	retry := struct {
		Enabled                                      bool
		InitialInterval, MaxInterval, MaxElapsedTime time.Duration
	}{true, 500 * time.Millisecond, 5 * time.Second, f.timeout}
	switch f.protocol {
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithTimeout(f.timeout), otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig(retry))}
		switch {
		case isURL:
			opts = append(opts, otlptracegrpc.WithEndpointURL(f.endpoint))
		case f.endpoint != "":
			opts = append(opts, otlptracegrpc.WithEndpoint(f.endpoint))
		}
		if f.insecure {
			// Plain gRPC whatever OTEL_EXPORTER_OTLP_CERTIFICATE says: the
			// exporter takes credentials from the environment before
			// WithInsecure, so the flag names its credentials.
			opts = append(opts, otlptracegrpc.WithTLSCredentials(insecure.NewCredentials()))
		}
		return func(ctx context.Context) (*otlptrace.Exporter, error) { return otlptracegrpc.New(ctx, opts...) }, nil
	case "http", "http/protobuf":
		opts := []otlptracehttp.Option{otlptracehttp.WithTimeout(f.timeout), otlptracehttp.WithRetry(otlptracehttp.RetryConfig(retry))}
		switch {
		case isURL:
			opts = append(opts, otlptracehttp.WithEndpointURL(f.endpoint))
		case f.endpoint != "":
			opts = append(opts, otlptracehttp.WithEndpoint(f.endpoint))
		}
		if f.insecure {
			// http:// whatever the environment says of certificates: the
			// exporter refuses a TLS configuration beside WithInsecure,
			// and would read one from OTEL_EXPORTER_OTLP_CERTIFICATE.
			opts = append(opts, otlptracehttp.WithInsecure(), otlptracehttp.WithTLSClientConfig(nil))
		}
		return func(ctx context.Context) (*otlptrace.Exporter, error) { return otlptracehttp.New(ctx, opts...) }, nil
	}
	return nil, usageError{Err: fmt.Errorf("--protocol %q: want grpc or http", f.protocol)}
}

// where names the destination in messages, without anything secret: the
// endpoint holds no credentials (checked above), and headers are never
// named.
func (f *replayFlags) where() string {
	e := f.endpoint
	if e == "" {
		e = "the endpoint in OTEL_EXPORTER_OTLP_*ENDPOINT"
	}
	return fmt.Sprintf("%s (OTLP/%s)", render.Clean(e), f.protocol)
}

func (f *replayFlags) run(ctx context.Context, cmd *cobra.Command, r *sessions.Records, newExporter func(context.Context) (*otlptrace.Exporter, error), o replay.Options) (err error) {
	exp, err := newExporter(ctx)
	if err != nil {
		return fmt.Errorf("set up the exporter to %s: %w", f.where(), err)
	}
	defer func() {
		// Everything was sent, or failed, batch by batch; Shutdown only
		// closes the connection, so it gets a short bound of its own.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := exp.Shutdown(sctx); serr != nil && err == nil {
			err = fmt.Errorf("close the connection to %s: %w", f.where(), serr)
		}
	}()

	bar := render.NewProgressLine(cmd.ErrOrStderr())
	if f.cursor != "" {
		return f.runCursor(ctx, cmd, r, exp, o, bar)
	}
	o.Progress = bar.Show
	p, err := replay.Replay(ctx, r, exp, o)
	bar.Done()
	render.Repaired(cmd.ErrOrStderr(), p)
	switch {
	case errors.Is(err, replay.ErrNoSession):
		return err
	case err != nil && ctx.Err() != nil:
		return fmt.Errorf("interrupted after sending %d spans to %s", p.Spans, f.where())
	case err != nil && p.Spans == 0:
		return fmt.Errorf("nothing accepted the spans at %s within %v: %w\n"+
			"Check that an OTLP receiver listens there, and whether it expects TLS (--insecure sends without)", f.where(), f.timeout, err)
	case err != nil:
		return fmt.Errorf("sending to %s failed after it accepted %s of %s: %w", f.where(), render.Plural(p.Spans, "span"), render.Plural(p.Sessions, "session"), err)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "replayed %s, %s, to %s\n", render.Plural(p.Sessions, "session"), render.Plural(p.Spans, "span"), f.where())
	return err
}
