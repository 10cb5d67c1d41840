package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
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
			var export func(context.Context, io.Writer, *sessions.Records, sessionFlag, *progress) error
			switch format {
			case formatChrome:
				export = exportChrome
			case formatOTLPJSON:
				export = exportOTLP
			case "":
				return usageError{errors.New("say which format, --format chrome or --format otlp-json")}
			default:
				return usageError{fmt.Errorf("--format %q: want chrome or otlp-json", format)}
			}
			return a.read(cmd, func(r *sessions.Records) error {
				return writeOutput(cmd, output, func(w io.Writer) error {
					prog := newProgress(cmd.ErrOrStderr(), "export")
					defer prog.finish()
					return export(cmd.Context(), w, r, session, prog)
				})
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

// traceEvent is one event of the Chrome Trace Event format: a complete
// event ("X") for a record, an instant event ("i") for one of its events,
// or a metadata event ("M") naming a process or a thread.
type traceEvent struct {
	Name  string `json:"name"`
	Cat   string `json:"cat,omitempty"`
	Ph    string `json:"ph"`
	Ts    int64  `json:"ts"`            // microseconds
	Dur   *int64 `json:"dur,omitempty"` // microseconds; complete events only
	Pid   int    `json:"pid"`
	Tid   int    `json:"tid"`
	Scope string `json:"s,omitempty"` // an instant event's scope: "t", its thread
	Args  any    `json:"args,omitempty"`
}

// recordArgs are the args of a record's complete event.
type recordArgs struct {
	Kind         string         `json:"kind"`
	Seq          uint64         `json:"seq"`
	OffsetNs     int64          `json:"offset_ns"`
	WallNs       int64          `json:"wall_ns"`
	Attributes   sessions.Attrs `json:"attributes"`
	Status       string         `json:"status,omitempty"`
	TraceID      string         `json:"trace_id,omitempty"`
	SpanID       string         `json:"span_id,omitempty"`
	ParentSpanID string         `json:"parent_span_id,omitempty"`
}

// micros converts a session's start plus an offset to microseconds since
// the Unix epoch, rounded down. Rounding both ends of every record the
// same way keeps what nests nested and what follows apart, which rounding
// a start and a duration separately would not.
func micros(session sessions.SessionID, offset int64) int64 {
	return (int64(session) + offset) / 1000
}

// exportChrome writes a Chrome Trace Event file (JSON Object Format). It
// reads the store twice: once to lay every session's records out in lanes,
// keeping only where each lies (a few words a record), and once to write
// them.
func exportChrome(_ context.Context, w io.Writer, r *sessions.Records, f sessionFlag, prog *progress) error {
	opts := f.readOptions()
	rows, err := sessionRows(r, opts...)
	if err != nil {
		return err
	}
	kinds, err := r.Kinds()
	if err != nil {
		return err
	}
	laid := map[sessions.SessionID][]span{}
	var total int64
	for kr, err := range inStampOrder(r, kinds, opts...) {
		if err != nil {
			return err
		}
		id := kr.Stamp.Session
		laid[id] = append(laid[id], span{seq: kr.Stamp.Seq, start: kr.Stamp.Offset, end: kr.Stamp.Offset + max(kr.Record.Wall, 0)})
		total++
		prog.add()
	}
	if f.set && len(rows) == 0 && len(laid) == 0 {
		return f.missing()
	}
	lanes := map[sessions.SessionID]int{}
	for id, spans := range laid {
		lanes[id] = len(layOut(spans))
	}
	prog.setTotal(total)

	// One event a line, easy to read and to grep.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	first := true
	emit := func(e traceEvent) error {
		buf.Reset()
		if !first {
			buf.WriteString(",\n")
		}
		first = false
		if err := enc.Encode(e); err != nil {
			return err
		}
		_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	}
	if _, err := io.WriteString(w, "{\"traceEvents\":[\n"); err != nil {
		return err
	}
	var (
		pid   int
		spans []span
		next  int // the index in spans of the record to come
	)
	err = explain.Walk(r, explain.Visitor{
		Begin: func(s sessions.Session) error {
			pid++
			spans, next = laid[s.ID], 0
			name := "session " + s.ID.String()
			if s.Label != "" {
				name += ": " + s.Label
			}
			if err := emit(traceEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": name}}); err != nil {
				return err
			}
			if err := emit(traceEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}}); err != nil {
				return err
			}
			for lane := range lanes[s.ID] {
				tid := lane + 1
				if err := emit(traceEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": "lane " + strconv.Itoa(tid)}}); err != nil {
					return err
				}
				if err := emit(traceEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": tid}}); err != nil {
					return err
				}
			}
			return nil
		},
		Record: func(kr kindRecord) error {
			prog.add()
			// Both passes read the same store in the same order.
			for next < len(spans) && spans[next].seq != kr.Stamp.Seq {
				next++
			}
			tid := 1
			if next < len(spans) {
				tid = spans[next].lane + 1
				next++
			}
			rec := kr.Record
			start := micros(kr.Stamp.Session, int64(kr.Stamp.Offset))
			dur := micros(kr.Stamp.Session, int64(kr.Stamp.Offset+max(rec.Wall, 0))) - start
			args := recordArgs{
				Kind:         kr.Kind,
				Seq:          kr.Stamp.Seq,
				OffsetNs:     int64(kr.Stamp.Offset),
				WallNs:       int64(rec.Wall),
				Attributes:   rec.Attributes,
				Status:       rec.Status.Code,
				TraceID:      rec.TraceID.String(),
				SpanID:       rec.SpanID.String(),
				ParentSpanID: rec.ParentSpanID.String(),
			}
			if args.Attributes == nil {
				args.Attributes = sessions.Attrs{}
			}
			if err := emit(traceEvent{Name: rec.Name, Cat: kr.Kind, Ph: "X", Ts: start, Dur: &dur, Pid: pid, Tid: tid, Args: args}); err != nil {
				return err
			}
			for _, e := range rec.Events {
				at := micros(kr.Stamp.Session, int64(kr.Stamp.Offset+e.Offset))
				var eargs any
				if len(e.Attributes) > 0 {
					eargs = e.Attributes
				}
				if err := emit(traceEvent{Name: e.Name, Cat: kr.Kind, Ph: "i", Ts: at, Pid: pid, Tid: tid, Scope: "t", Args: eargs}); err != nil {
					return err
				}
			}
			return nil
		},
	}, opts...)
	if err != nil {
		return err
	}
	// Durations are in microseconds; displayTimeUnit only asks the viewer
	// to show milliseconds.
	_, err = io.WriteString(w, "\n],\n\"displayTimeUnit\":\"ms\"}\n")
	return err
}

// otlpSpansPerResource is how many spans one ResourceSpans of an OTLP JSON
// export holds at most, and otlpBytesPerResource how many bytes of
// protobuf: a larger session is split, with the same Resource, so the
// export never holds more than about this much in memory, however large
// the records' values (a span of one huge value is a ResourceSpans of its
// own).
const (
	otlpSpansPerResource = 10_000
	otlpBytesPerResource = 4 << 20
)

// exportOTLP writes an OTLP JSON ExportTraceServiceRequest. The spans are
// made by package replay, as records replay makes them, and turned into
// OTLP's protobuf types by the OpenTelemetry OTLP exporter itself (through
// a Client that keeps them rather than send them), so a file and a replay
// carry the same spans. The request is written as it goes: its one field,
// resourceSpans, is opened by hand, and every ResourceSpans in it is
// marshalled by protojson. Strings that are not UTF-8, which OTLP cannot
// carry, are repaired by package replay, as records replay repairs them.
func exportOTLP(ctx context.Context, w io.Writer, r *sessions.Records, f sessionFlag, prog *progress) error {
	if f.set {
		// Say so before writing anything.
		if _, err := pickSession(r, f); err != nil {
			return err
		}
	}
	ow := &otlpWriter{w: w}
	exp, err := otlptrace.New(ctx, ow)
	if err != nil {
		return err
	}
	field := (&coltracepb.ExportTraceServiceRequest{}).ProtoReflect().Descriptor().Fields().ByName("resource_spans").JSONName()
	if _, err := fmt.Fprintf(w, "{%q:[", field); err != nil {
		return err
	}
	var o replay.Options
	if f.set {
		o.Sessions = []sessions.SessionID{sessions.SessionID(f.id)}
	}
	o.Progress = func(p replay.Progress) { prog.update(int64(p.Spans)) }
	if _, err := replay.Replay(ctx, r, exp, o); err != nil {
		if errors.Is(err, replay.ErrNoSession) {
			return f.missing()
		}
		return err
	}
	if err := exp.Shutdown(ctx); err != nil {
		return err
	}
	if err := ow.flush(); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n]}\n")
	return err
}

// otlpWriter is an otlptrace.Client that writes what it is given as the
// resourceSpans of an OTLP JSON file, one per line, instead of sending it.
// The exporter hands it a batch at a time, a batch may hold the end of one
// session and the start of the next, and a session may span many batches:
// it merges a session's batches into one ResourceSpans, up to
// otlpSpansPerResource spans, and writes it when the next session begins.
// Its methods are called from one goroutine, the one running the export.
type otlpWriter struct {
	w       io.Writer
	cur     *tracepb.ResourceSpans // the session being gathered, or nil
	curID   string                 // its records.session.id
	spans   int                    // how many spans cur holds
	bytes   int                    // cur's size in protobuf
	written int                    // how many ResourceSpans were written
}

func (*otlpWriter) Start(context.Context) error { return nil }
func (*otlpWriter) Stop(context.Context) error  { return nil }

// UploadTraces takes one batch, whose ResourceSpans come in no particular
// order (the exporter groups them in a map): they are put back in session
// order before they are merged.
func (ow *otlpWriter) UploadTraces(_ context.Context, batch []*tracepb.ResourceSpans) error {
	slices.SortStableFunc(batch, func(a, b *tracepb.ResourceSpans) int {
		return cmp.Compare(sessionOrder(a), sessionOrder(b))
	})
	for _, rs := range batch {
		id, n, size := sessionAttr(rs), countSpans(rs), proto.Size(rs)
		if ow.cur != nil && id == ow.curID && ow.spans+n <= otlpSpansPerResource && ow.bytes+size <= otlpBytesPerResource {
			mergeScopes(ow.cur, rs)
			ow.spans, ow.bytes = ow.spans+n, ow.bytes+size
			continue
		}
		if err := ow.flush(); err != nil {
			return err
		}
		ow.cur, ow.curID, ow.spans, ow.bytes = rs, id, n, size
	}
	return nil
}

// flush writes the ResourceSpans being gathered, if any.
func (ow *otlpWriter) flush() error {
	if ow.cur == nil {
		return nil
	}
	b, err := otlpJSON(ow.cur)
	if err != nil {
		return err
	}
	sep := "\n"
	if ow.written > 0 {
		sep = ",\n"
	}
	ow.cur, ow.written = nil, ow.written+1
	if _, err := io.WriteString(ow.w, sep); err != nil {
		return err
	}
	_, err = ow.w.Write(b)
	return err
}

// sessionAttr returns the records.session.id of a ResourceSpans' Resource.
func sessionAttr(rs *tracepb.ResourceSpans) string {
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == string(spanbridge.SessionIDKey) {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// sessionOrder returns the session id of a ResourceSpans as a number, so
// sessions sort by start.
func sessionOrder(rs *tracepb.ResourceSpans) uint64 {
	n, _ := strconv.ParseUint(sessionAttr(rs), 10, 64)
	return n
}

func countSpans(rs *tracepb.ResourceSpans) int {
	n := 0
	for _, ss := range rs.GetScopeSpans() {
		n += len(ss.GetSpans())
	}
	return n
}

// mergeScopes adds the spans of from to into, under the same scope.
func mergeScopes(into, from *tracepb.ResourceSpans) {
	for _, ss := range from.GetScopeSpans() {
		i := slices.IndexFunc(into.ScopeSpans, func(x *tracepb.ScopeSpans) bool {
			return x.GetSchemaUrl() == ss.GetSchemaUrl() && proto.Equal(x.GetScope(), ss.GetScope())
		})
		if i < 0 {
			into.ScopeSpans = append(into.ScopeSpans, ss)
			continue
		}
		into.ScopeSpans[i].Spans = append(into.ScopeSpans[i].Spans, ss.Spans...)
	}
}

// otlpJSON returns a ResourceSpans as OTLP JSON. protojson gives the
// protobuf JSON mapping; OTLP/JSON differs from it in one point, which is
// fixed after: trace and span ids are hex, not base64. Enums are written
// as numbers, which OTLP/JSON requires. The result is re-encoded by
// encoding/json, which also makes it byte-stable: protojson varies its
// whitespace on purpose.
func otlpJSON(rs *tracepb.ResourceSpans) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(rs)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep every number exactly as protojson wrote it
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if err := hexIDs(v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// otlpIDFields are the fields of OTLP's trace messages (Span, Span.Link)
// that hold ids: bytes, which protojson writes in base64 and OTLP/JSON
// wants in hex. No other JSON key of a trace request has these names:
// attribute keys are values there, not keys.
var otlpIDFields = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// hexIDs rewrites, in place, every id field of a decoded OTLP JSON value
// from base64 to hex.
func hexIDs(v any) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && otlpIDFields[k] {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("OTLP JSON: %s %q is not base64: %w", k, s, err)
				}
				x[k] = hex.EncodeToString(b)
				continue
			}
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range x {
			if err := hexIDs(e); err != nil {
				return err
			}
		}
	}
	return nil
}
