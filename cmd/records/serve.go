package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/serve"
)

// defaultListen is where records serve listens unless told: a free port
// of the loopback address, which only this machine reaches.
const defaultListen = "127.0.0.1:0"

func (a *app) serveCommand() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the stores as a read-only web app: sessions, timelines, why, diff and cost, linked",
		Long: `Serve the store (or the stores --dir names, as one) as web pages, until
interrupted: the sessions, newest first, filtered by service, label, time
and what kept them, each saying which store holds it; a session's timeline
(the report's drawing: its records on lanes, the critical path outlined),
summary and records, live while it is written; a record's attributes, the
records it ran inside, and why it was done, each attribute a link to the
history of its value across sessions; a diff of two sessions, or of a
session and the one before it of its label, regressions first, with
--fail-slower's verdict; and cost, each piece of work a link to its
history. Every page has its JSON at the same path under /api/ (/api/sessions,
/api/sessions/ID...): the objects --json prints, one per line.

It prints the address to open, and listens on a free port of 127.0.0.1
unless --listen says otherwise. It has no authentication: an address
other than loopback is served only when --listen names it, and then
records serve says so; put it behind the proxy you already run.

It only reads: the stores are opened read-only, and held open between
pages; a program that writes one asks for it, and has it within a
fraction of a second of the page under way. Every value a store holds is
escaped, and the pages run no script but their own (their Content
Security Policy says so). A page reads what it shows, as the commands
do: a page of records at a time, a timeline of at most 20,000 bars.`,
		Example: `  records serve
  records serve --dir ./build/records
  records serve --dir 'runners/*/records' --listen 0.0.0.0:8080`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usageError{Err: fmt.Errorf("--listen %s: %w", listen, err)}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.serve(ctx, cmd, ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", defaultListen, "the `address` to listen on (host:port; port 0 picks a free one)")
	return cmd
}

// serve serves the stores on ln until ctx ends.
func (a *app) serve(ctx context.Context, cmd *cobra.Command, ln net.Listener) error {
	stderr := cmd.ErrOrStderr()
	names, err := a.List()
	if err != nil {
		ln.Close()
		return err
	}
	held := a.Hold(stderr)
	defer held.Close()
	// Opened before the address is printed: a store that cannot be read
	// is said at once, and the first page is not kept waiting.
	if err := held.Read(ctx, nil); err != nil {
		ln.Close()
		return err
	}
	cfg := serve.Config{Stores: held, Names: names, Log: stderr}
	addr := ln.Addr().(*net.TCPAddr)
	if addr.IP.IsLoopback() {
		cfg.Hosts = serve.LoopbackHosts
	} else {
		fmt.Fprintf(stderr, "records: serving on %s, which other machines may reach: records serve has no authentication; put it behind a proxy that has\n", render.Clean(addr.String()))
	}
	srv := serve.HTTPServer(serve.New(cfg), stderr)
	// A page's read, and a live view's stream, end when serve does.
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "localhost"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "records: serving %s at http://%s/\n", render.Clean(joinNames(names)), net.JoinHostPort(host, fmt.Sprint(addr.Port)))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// joinNames names the stores served.
func joinNames(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return fmt.Sprintf("%d stores", len(names))
}
