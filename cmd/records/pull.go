package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/sessions"
)

type pullFlags struct {
	from     string
	services []string
	since    string
	until    string
	where    []string
	insecure bool
	timeout  time.Duration
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

The connection uses TLS unless --insecure says otherwise: an http:// URL
needs it. Headers (an API key, say) come from OTEL_EXPORTER_OTLP_HEADERS or
OTEL_EXPORTER_OTLP_TRACES_HEADERS, a CA certificate and client certificates
from OTEL_EXPORTER_OTLP_CERTIFICATE, ..._CLIENT_CERTIFICATE and
..._CLIENT_KEY, as records replay takes them; they are never printed.
--timeout bounds connecting and waiting for each answer to begin.

An address nothing answers at, or that is not a Jaeger query service, is
said to be so, and nothing is written. Spans that carry no record (a
program's own, another service's) are counted and left.`,
		Example: `  records pull --from https://jaeger.example.com
  records pull --from http://127.0.0.1:16686 --insecure --service build --since 24h
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
	fl.StringVar(&f.from, "from", "", "the Jaeger query service, `URL` (https://host, or http://host:16686 with --insecure)")
	fl.StringArrayVar(&f.services, "service", nil, "read only this `service`'s traces (repeatable)")
	fl.StringVar(&f.since, "since", "", "read traces with a span that started at or after this `time` (2026-01-02, RFC 3339, or a duration ago: 24h)")
	fl.StringVar(&f.until, "until", "", "read traces with a span that started at or before this `time` (as --since)")
	fl.StringArrayVar(&f.where, "where", nil, "pull only the sessions holding a record whose attribute has this value, `key=value` (repeatable)")
	fl.BoolVar(&f.insecure, "insecure", false, "read without TLS (http://)")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait to connect, and for each answer to begin")
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
		return o, usageError{fmt.Errorf("--until %s is before --since %s", f.until, f.since)}
	}
	if len(f.where) > 0 {
		filters, err := parseWhere(f.where)
		if err != nil {
			return o, err
		}
		o.Match = func(_ string, rec sessions.Record) bool { return matches(rec, filters) }
	}
	if f.timeout <= 0 {
		return o, usageError{errors.New("--timeout must be positive")}
	}
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
	return time.Time{}, usageError{fmt.Errorf("%s %q: not a time (2026-01-02, 2026-01-02T15:04:05Z) or a duration ago (24h)", flag, s)}
}

// jaeger checks --from and the TLS and header settings, and returns the
// query service to read.
func (f *pullFlags) jaeger() (*pull.Jaeger, error) {
	if f.from == "" {
		return nil, usageError{errors.New("give the Jaeger query service with --from URL (http://host:16686 with --insecure, or https://host)")}
	}
	u, err := url.Parse(f.from)
	switch {
	case err != nil || u.Host == "" || !strings.Contains(f.from, "://"):
		return nil, usageError{fmt.Errorf("--from %s: want a URL, http://host:16686 or https://host", clean(f.from))}
	case u.User != nil:
		// The URL is printed in messages; credentials must not be.
		return nil, usageError{errors.New("--from must not hold credentials: give them as headers in OTEL_EXPORTER_OTLP_HEADERS")}
	case u.Scheme == "http" && !f.insecure:
		return nil, usageError{errors.New("--from http://... reads without TLS: use https://, or say so with --insecure")}
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, usageError{fmt.Errorf("--from: unknown scheme %q (want http or https)", u.Scheme)}
	}
	header, err := envHeaders()
	if err != nil {
		return nil, err
	}
	tlsConf, err := envTLS()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConf
	transport.DialContext = (&net.Dialer{Timeout: f.timeout}).DialContext
	transport.TLSHandshakeTimeout = f.timeout
	transport.ResponseHeaderTimeout = f.timeout
	j, err := pull.NewJaeger(f.from, &http.Client{Transport: transport}, header)
	if err != nil {
		return nil, usageError{fmt.Errorf("--from: %w", err)}
	}
	return j, nil
}

// envHeaders reads the headers records replay sends, from
// OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS (which
// wins): key=value pairs, comma-separated, each value URL-encoded. A pair
// that does not read is an error naming its key, never its value.
func envHeaders() (http.Header, error) {
	header := http.Header{}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		for pair := range strings.SplitSeq(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" || strings.ContainsAny(k, " \t\r\n:") {
				return nil, fmt.Errorf("%s: a header is not key=value (key %q)", name, clean(k))
			}
			val, err := url.PathUnescape(val)
			if err != nil {
				return nil, fmt.Errorf("%s: the value of header %s is not URL-encoded", name, clean(k))
			}
			header.Set(k, strings.TrimSpace(val))
		}
	}
	return header, nil
}

// envTLS reads the CA and client certificates records replay uses, from
// OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE, ..._CLIENT_CERTIFICATE and
// ..._CLIENT_KEY (the TRACES_ ones win). nil when none is set: the
// system's roots.
func envTLS() (*tls.Config, error) {
	get := func(what string) string {
		return firstEnv("OTEL_EXPORTER_OTLP_TRACES_"+what, "OTEL_EXPORTER_OTLP_"+what)
	}
	ca, cert, key := get("CERTIFICATE"), get("CLIENT_CERTIFICATE"), get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("the CA certificate: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the CA certificate %s holds no PEM certificate", clean(ca))
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("the client certificate: %w", err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// firstEnv returns the first of the environment variables that is set.
func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// pullInto opens the store for writing (creating it, waiting --wait for
// another process that holds it), pulls into it, and says what it
// pulled.
func (a *app) pullInto(ctx context.Context, cmd *cobra.Command, j *pull.Jaeger, o pull.Options) error {
	// Whether --from is a query service is asked first, so that a
	// mistyped address leaves no store behind.
	if _, err := j.Services(ctx); err != nil {
		return pullError(err, pull.Progress{})
	}
	return a.write(cmd, true, func(dir string, st *badgerstore.Store) error {
		return pullWith(ctx, cmd, dir, st, j, o)
	})
}

// pullWith pulls into the store st, open in dir, and says what it pulled.
func pullWith(ctx context.Context, cmd *cobra.Command, dir string, st *badgerstore.Store, j *pull.Jaeger, o pull.Options) error {
	stderr := cmd.ErrOrStderr()
	prog := newProgress(stderr, "pull")
	o.Progress = func(p pull.Progress) { prog.update(int64(p.Records + p.Present)) }
	p, err := pull.Pull(ctx, j, sessions.NewRecords(st), o)
	prog.finish()
	if err != nil {
		return pullError(err, p)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "pulled %s, %s, from %s into %s\n", plural(p.Sessions, "session"), plural(p.Records, "record"), clean(j.String()), clean(dir))
	if p.Present > 0 || p.NotRecords > 0 {
		_, err = fmt.Fprintf(out, "(%s read were in the store already; %s read carried no record)\n", plural(p.Present, "record"), plural(p.NotRecords, "span"))
	}
	if p.TooLarge > 0 && err == nil {
		_, err = fmt.Fprintf(out, "(left out, larger than a store takes: %d of the records and session rows read, which a reader would skip)\n", p.TooLarge)
	}
	return err
}

// pullError says why a pull failed, with what to check, and how far it
// got.
func pullError(err error, p pull.Progress) error {
	var hint string
	switch {
	case errors.Is(err, pull.ErrUnreachable):
		hint = "\nCheck the address (the query service's HTTP port, 16686 by default), and whether it expects TLS (--insecure reads without)"
	case errors.Is(err, pull.ErrNotJaeger):
		hint = "\n--from names a Jaeger query service (v1.76 or later: its api_v3), not its OTLP port (4317, 4318) nor a Collector"
	case errors.Is(err, pull.ErrRefused):
		hint = "\nGive credentials as headers in OTEL_EXPORTER_OTLP_HEADERS"
	}
	if p.Records > 0 {
		return fmt.Errorf("%w%s\n(%s of %s were written before; run again for the rest)", err, hint, plural(p.Records, "record"), plural(p.Sessions, "session"))
	}
	return fmt.Errorf("%w%s", err, hint)
}
