package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/tracefile"
)

// The export formats.
const (
	formatChrome   = "chrome"
	formatOTLPJSON = "otlp-json"
)

func (a *app) exportCommand() *cobra.Command {
	var (
		format  string
		output  string
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "export --format chrome|otlp-json [-o FILE]",
		Short: "Export sessions as a Chrome trace or as OTLP JSON",
		Long: `Export the store's sessions (or one, with --session) to a file, for the
tools people already have.

--format chrome writes a Chrome Trace Event file (JSON), which Perfetto UI
(ui.perfetto.dev, Open trace file) and chrome://tracing open: each session
is a process, named after its id and label; each record a complete event
(its name, with the kind as category) starting at its session's start plus
its offset, in microseconds since the Unix epoch, and lasting its wall
time; its events are instant events. Records that overlap without one
containing the other are put on separate threads ("lanes"), since the
events of one thread must nest. The event args hold the record's kind,
seq, offset_ns, wall_ns and attributes.

--format otlp-json writes OTLP JSON: one ExportTraceServiceRequest, in the
protobuf JSON mapping as OTLP/HTTP takes it (trace and span ids in hex,
enums as numbers), which a Collector's OTLP/HTTP receiver accepts as is.
Each session is a ResourceSpans (the session's Resource attributes plus
records.session.id, records.session.label, process.pid, ...) and each
record a span with its original trace, span and parent ids, exactly as
records replay sends them. A session of more than 10,000 records is split
into several ResourceSpans with the same Resource, so the export holds a
bounded amount in memory.

Without -o, the export goes to standard output. A file is written whole
or not at all, readable by its owner only. Progress is shown on standard
error when it is a terminal.`,
		Example: `  records export --format chrome -o build.trace.json
  records export --format otlp-json --session 1735787045006000000 -o session.otlp.json
  curl -H 'Content-Type: application/json' --data-binary @session.otlp.json http://localhost:4318/v1/traces`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			session.parse(cmd)
			var o tracefile.Options
			if session.set {
				o.Sessions = []sessions.SessionID{sessions.SessionID(session.id)}
			}
			var export func(io.Writer, *sessions.Records) error
			switch format {
			case formatChrome:
				export = func(w io.Writer, r *sessions.Records) error { return tracefile.WriteChrome(w, r, o) }
			case formatOTLPJSON:
				export = func(w io.Writer, r *sessions.Records) error {
					_, err := tracefile.WriteOTLP(cmd.Context(), w, r, o)
					return err
				}
			case "":
				return usageError{Err: errors.New("say which format, --format chrome or --format otlp-json")}
			default:
				return usageError{Err: fmt.Errorf("--format %q: want chrome or otlp-json", format)}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				err := writeOutput(cmd, output, func(w io.Writer) error {
					prog := newProgress(cmd.ErrOrStderr(), "export")
					defer prog.finish()
					o.Progress = prog.tell
					return export(w, r)
				})
				if errors.Is(err, replay.ErrNoSession) {
					return session.missing()
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "the file format: `chrome` or otlp-json")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this `file` (default: standard output)")
	session.register(cmd, "export only the session with this `id`")
	return cmd
}

// writeOutput runs write on the output a command was asked for: standard
// output when path is "" or "-", else the file at path. A file is written
// beside its final name and renamed into place only once write succeeds,
// so a failed or interrupted export never leaves half a file; it is
// readable by its owner only, as records can carry anything a program put
// in its spans.
func writeOutput(cmd *cobra.Command, path string, write func(io.Writer) error) (err error) {
	if path == "" || path == "-" {
		out := bufio.NewWriter(cmd.OutOrStdout())
		if err := write(out); err != nil {
			out.Flush() // show what was written before the error
			return err
		}
		return out.Flush()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp") // mode 0600
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	out := bufio.NewWriterSize(f, 1<<16)
	if err := write(out); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
