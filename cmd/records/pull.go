package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/otlpenv"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/internal/ground/env"
	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/sessions"
)

type pullFlags struct {
	from       string
	services   []string
	since      string
	until      string
	where      []string
	insecure   bool
	timeout    time.Duration
	maxQueries int
	maxAnswer  string
}

func (a *app) pullCommand() *cobra.Command {
	var f pullFlags
	cmd := &cobra.Command{
		Use:   "pull --from URL",
		Short: "Read sessions back from a Jaeger query service into the store",
		Long: `Read the sessions records replay (or the records processor of a
Collector) sent to Jaeger back from its query service (Jaeger v2's api_v3,
the query port, 16686 by default) into the store (--dir), exactly as they
were: session ids, seqs, offsets, kinds, attributes and session rows. Then
every command answers on the fleet's records: why, diff, cost, report.

Only what the store does not hold yet is written: a record of a session
and seq it has is not written again, so pull can run after every build,
or from cron, and fetches again only to find what is new. The store is
created if need be, and held while the pull writes.

--service reads those services only (repeatable; default every service
Jaeger knows). --since and --until bound when spans started (a time,
2026-01-02 or 2026-01-02T15:04:05Z, or a duration ago, 24h); Jaeger finds
whole traces with a span in that range. By default the range is all time:
replayed spans keep their original times. --where key=value pulls only the
sessions holding a record whose attribute key has that value, whole (as
show compares it; repeatable, all must hold on one record); it reads the
traces twice, the second time within the sessions' time.

The URL's scheme says how to connect: http:// without TLS, https:// with
TLS, verifying the query service's certificate (--insecure skips that
check, for a test server's own certificate). Headers (an API key, say)
come from OTEL_EXPORTER_OTLP_HEADERS or OTEL_EXPORTER_OTLP_TRACES_HEADERS,
a CA certificate and client certificates from
OTEL_EXPORTER_OTLP_CERTIFICATE, ..._CLIENT_CERTIFICATE and ..._CLIENT_KEY,
as records replay takes them; they are never printed.

The query service is read as untrusted input, within limits: --timeout
bounds each answer, from asking to its last byte (30s); --max-answer-size
its size (1GiB); --max-queries how many queries a pull asks (10000, some
three million traces). A span larger than 8 MiB of OTLP JSON is stepped
over and counted. Whatever the service sends, a pull ends, and its memory
stays bounded (about 130 MiB at most in the tests, RELIABILITY.md §10).
A limit reached ends the pull with an error naming it.

What a pull reads is written into the store only when it has read
everything (it is staged in a directory beside the store until then): a
pull that fails, or is cut off by a limit or an interrupt, writes
nothing, so it leaves no session with part of what it read of it.

Records are judged by the rules the Collector applies to its senders:
spans of a session id no recorder gives (0, past 2262) or with a negative
seq are refused; times before 1970, an end before its start or more than
a week after it are corrected (the span's own are kept in the record's
records.span.start and records.span.end); a session row's start of no
plausible time becomes its id's. A session id the store holds with other
content (another session's start, process or host; another record at a
seq) is a conflict: the store's is kept, and nothing of the other taken.
Each is counted and said.

An address nothing answers at, or that is not a Jaeger query service, is
said to be so, and nothing is written. Spans that carry no record (a
program's own, another service's) are counted and left.`,
		Example: `  records pull --from https://jaeger.example.com
  records pull --from http://127.0.0.1:16686 --service build --since 24h
  records pull --from https://jaeger.example.com --where compile.key=matmul_1024
  records --dir ./fleet pull --from https://jaeger.example.com && records --dir ./fleet report`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := f.options(time.Now())
			if err != nil {
				return err
			}
			j, err := f.jaeger()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			return a.pullInto(ctx, cmd, j, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "the Jaeger query service, `URL` (https://host, or http://host:16686 without TLS)")
	fl.StringArrayVar(&f.services, "service", nil, "read only this `service`'s traces (repeatable)")
	fl.StringVar(&f.since, "since", "", "read traces with a span that started at or after this `time` (2026-01-02, RFC 3339, or a duration ago: 24h)")
	fl.StringVar(&f.until, "until", "", "read traces with a span that started at or before this `time` (as --since)")
	fl.StringArrayVar(&f.where, "where", nil, "pull only the sessions holding a record whose attribute has this value, `key=value` (repeatable)")
	fl.BoolVar(&f.insecure, "insecure", false, "with https://, do not verify the query service's certificate")
	fl.DurationVar(&f.timeout, "timeout", pull.DefaultAnswerTimeout, "how long each answer may take, from asking to its last byte")
	fl.StringVar(&f.maxAnswer, "max-answer-size", "1GiB", "the largest answer to read, a `size` (512MiB, 2GiB)")
	fl.IntVar(&f.maxQueries, "max-queries", pull.DefaultMaxQueries, "the most queries one pull asks")
	return cmd
}

// options checks the flags that say what to pull.
func (f *pullFlags) options(now time.Time) (pull.Options, error) {
	var o pull.Options
	o.Services = f.services
	var err error
	if o.Since, err = parseWhen("--since", f.since, now); err != nil {
		return o, err
	}
	if o.Until, err = parseWhen("--until", f.until, now); err != nil {
		return o, err
	}
	if !o.Since.IsZero() && !o.Until.IsZero() && o.Until.Before(o.Since) {
		return o, usageError{Err: fmt.Errorf("--until %s is before --since %s", f.until, f.since)}
	}
	if len(f.where) > 0 {
		filters, err := parseWhere(f.where)
		if err != nil {
			return o, err
		}
		o.Match = func(_ string, rec sessions.Record) bool { return render.Matches(rec, filters) }
	}
	if f.timeout <= 0 {
		return o, usageError{Err: errors.New("--timeout must be positive")}
	}
	o.AnswerTimeout = f.timeout
	if f.maxQueries <= 0 {
		return o, usageError{Err: errors.New("--max-queries must be positive")}
	}
	o.MaxQueries = f.maxQueries
	n, err := env.ParseSize(f.maxAnswer)
	if err != nil || n <= 0 {
		return o, usageError{Err: fmt.Errorf("--max-answer-size %q: want a size, 512MiB or 2GiB", render.Clean(f.maxAnswer))}
	}
	o.MaxAnswerBytes = n
	return o, nil
}

// parseWhen reads a time as --since and --until take it: RFC 3339, a
// date (midnight UTC), or a duration before now.
func parseWhen(flag, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageError{Err: fmt.Errorf("%s %q: not a time (2026-01-02, 2026-01-02T15:04:05Z) or a duration ago (24h)", flag, s)}
}

// jaeger checks --from and the TLS and header settings, and returns the
// query service to read.
func (f *pullFlags) jaeger() (*pull.Jaeger, error) {
	if f.from == "" {
		return nil, usageError{Err: errors.New("give the Jaeger query service with --from URL (http://host:16686, or https://host)")}
	}
	u, err := url.Parse(f.from)
	switch {
	case err != nil || u.Host == "" || !strings.Contains(f.from, "://"):
		return nil, usageError{Err: fmt.Errorf("--from %s: want a URL, http://host:16686 or https://host", render.Clean(f.from))}
	case u.User != nil:
		// The URL is printed in messages; credentials must not be.
		return nil, usageError{Err: errors.New("--from must not hold credentials: give them as headers in OTEL_EXPORTER_OTLP_HEADERS")}
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, usageError{Err: fmt.Errorf("--from: unknown scheme %q (want http or https)", u.Scheme)}
	}
	env, err := otlpenv.Read()
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	for k, v := range env.Headers {
		header.Set(k, v)
	}
	tlsConf := env.TLS
	if f.insecure {
		if tlsConf == nil {
			tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tlsConf.InsecureSkipVerify = true
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConf
	// The whole answer is bounded by --timeout (the client's Timeout, and
	// pull.Options.AnswerTimeout); so is each step of it.
	transport.DialContext = (&net.Dialer{Timeout: f.timeout}).DialContext
	transport.TLSHandshakeTimeout = f.timeout
	transport.ResponseHeaderTimeout = f.timeout
	j, err := pull.NewJaeger(f.from, &http.Client{Transport: transport, Timeout: f.timeout}, header)
	if err != nil {
		return nil, usageError{Err: fmt.Errorf("--from: %w", err)}
	}
	return j, nil
}

// pullInto opens the store for writing (creating it, waiting --wait for
// another process that holds it), pulls into it, and says what it
// pulled.
func (a *app) pullInto(ctx context.Context, cmd *cobra.Command, j *pull.Jaeger, o pull.Options) error {
	// Whether --from is a query service is asked first, so that a
	// mistyped address leaves no store behind.
	if _, err := j.Services(ctx); err != nil {
		return render.PullError(err, pull.Progress{})
	}
	return a.Write(ctx, cmd.ErrOrStderr(), true, func(dir string, st *badgerstore.Store) error {
		return pullWith(ctx, cmd, dir, st, j, o)
	})
}

// pullWith pulls into the store st, open in dir, staging what it reads in
// a store beside it, and says what it pulled.
func pullWith(ctx context.Context, cmd *cobra.Command, dir string, st *badgerstore.Store, j *pull.Jaeger, o pull.Options) (err error) {
	stage, remove, err := stores.OpenStaging(dir)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := remove(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	o.Staging = stage
	stderr := cmd.ErrOrStderr()
	prog := newProgress(stderr, "pull")
	o.Progress = func(p pull.Progress) { prog.update(int64(p.Taken + p.Present + p.Repeated)) }
	p, err := pull.Pull(ctx, j, sessions.NewRecords(st), o)
	prog.finish()
	if err != nil {
		return render.PullError(err, p)
	}
	return render.Pulled(cmd.OutOrStdout(), p, j.String(), dir)
}
