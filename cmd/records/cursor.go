package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
)

// runCursor sends the records the cursor file does not name as sent
// (replay.Resume), and says how far it got.
func (f *replayFlags) runCursor(ctx context.Context, cmd *cobra.Command, r *sessions.Records, exp sdktrace.SpanExporter, o replay.Options, bar *render.ProgressLine) error {
	o.Progress = bar.Show
	res, err := replay.Resume(ctx, r, exp, f.cursor, o)
	bar.Done()
	var rerr *replay.ResumeError
	switch {
	case errors.As(err, &rerr) && rerr.Sent:
		return err
	case errors.As(err, &rerr):
		counts := fmt.Sprintf("sent %s, the backend accepted %d, %d remain", render.Plural(res.Records, "record"), res.Accepted, res.Remain)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while sending session %d to %s; %s: run again to send them", rerr.Session, f.where(), counts)
		}
		return fmt.Errorf("sending session %d to %s failed: %w\n%s: run again to send them", rerr.Session, f.where(), rerr.Err, counts)
	case err != nil:
		return err
	case res.Unsent == 0:
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "nothing to replay: %s names every record of the store as sent\n", render.Clean(f.cursor))
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "replayed %s of %s to %s: sent %d, the backend accepted %d, %d remain; %s names them\n",
		render.Plural(res.Records, "record"), render.Plural(res.Sessions, "session"), f.where(), res.Records, res.Accepted, res.Remain, render.Clean(f.cursor))
	return err
}
