package tracefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
)

// Options narrow an export and report on it. The zero Options writes
// every session of the store, silently.
type Options struct {
	// Sessions, when not empty, are the only sessions written. One the
	// store holds nothing of is an error (wrapping replay.ErrNoSession),
	// returned before anything is written.
	Sessions []sessions.SessionID
	// Progress, when not nil, is told how far the export got, every few
	// thousand records and at the end of each pass over the store, on the
	// goroutine that called the export.
	Progress func(Progress)
}

// Progress is how far an export got.
type Progress struct {
	// Records is how many records were written or, while Total is 0,
	// read: a Chrome trace reads the store twice, once to lay its records
	// out in lanes and once to write them.
	Records int64
	// Total is how many records there are to write, once known.
	Total int64
}

// progressEvery is how many records go by between two reports of
// progress.
const progressEvery = 4096

// tell reports p to o.Progress, if set.
func (o Options) tell(p Progress) {
	if o.Progress != nil {
		o.Progress(p)
	}
}

// reads returns the read options of each pass over the store: one over
// every session, or one per session named, in id order.
func (o Options) reads() [][]sessions.ReadOption {
	if len(o.Sessions) == 0 {
		return [][]sessions.ReadOption{nil}
	}
	var reads [][]sessions.ReadOption
	for _, id := range slices.Compact(slices.Sorted(slices.Values(o.Sessions))) {
		reads = append(reads, []sessions.ReadOption{sessions.InSession(id)})
	}
	return reads
}

// check returns an error for the first session of o.Sessions the store
// holds neither a row nor a record of.
func (o Options) check(r *sessions.Records) error {
	for _, id := range o.Sessions {
		if _, ok, err := r.Session(id); err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		found := false
		for _, err := range r.Stamps(sessions.InSession(id)) {
			if err != nil {
				return err
			}
			found = true
			break
		}
		if !found {
			return fmt.Errorf("session %d: %w", id, replay.ErrNoSession)
		}
	}
	return nil
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

// WriteChrome writes the sessions of the store to w as a Chrome Trace
// Event file (its JSON Object Format), one event a line: each session a
// process named after its id and label, each record a complete event
// starting at its session's start plus its offset, in microseconds since
// the Unix epoch, and lasting its wall time, its events instant events.
// The event args hold the record's kind, seq, offset_ns, wall_ns and
// attributes (with its status and ids when it has them).
//
// Records that overlap without one containing the other go on separate
// threads ("lanes"), since the events of one thread must nest. So it
// reads the store twice: once to lay every session's records out in
// lanes, keeping only where each lies (a few words a record), and once to
// write them.
func WriteChrome(w io.Writer, r *sessions.Records, o Options) error {
	if err := o.check(r); err != nil {
		return err
	}
	kinds, err := r.Kinds()
	if err != nil {
		return err
	}
	laid := map[sessions.SessionID][]span{}
	var read int64
	for _, opts := range o.reads() {
		for kr, err := range r.InStampOrder(kinds, opts...) {
			if err != nil {
				return err
			}
			id := kr.Stamp.Session
			laid[id] = append(laid[id], span{seq: kr.Stamp.Seq, start: kr.Stamp.Offset, end: kr.Stamp.Offset + max(kr.Record.Wall, 0)})
			if read++; read%progressEvery == 0 {
				o.tell(Progress{Records: read})
			}
		}
	}
	o.tell(Progress{Records: read})
	lanes := map[sessions.SessionID]int{}
	for id, spans := range laid {
		lanes[id] = len(layOut(spans))
	}

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
		pid     int
		spans   []span
		next    int // the index in spans of the record to come
		written int64
	)
	v := explain.Visitor{
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
		Record: func(kr sessions.KindRecord) error {
			if written++; written%progressEvery == 0 {
				o.tell(Progress{Records: written, Total: read})
			}
			// Both passes read the same store in the same order.
			for next < len(spans) && spans[next].seq != kr.Stamp.Seq {
				next++
			}
			tid := 1
			if next < len(spans) {
				tid = spans[next].lane + 1
				next++
			}
			return emitRecord(emit, kr, pid, tid)
		},
	}
	for _, opts := range o.reads() {
		if err := explain.Walk(r, v, opts...); err != nil {
			return err
		}
	}
	o.tell(Progress{Records: written, Total: read})
	// Durations are in microseconds; displayTimeUnit only asks the viewer
	// to show milliseconds.
	_, err = io.WriteString(w, "\n],\n\"displayTimeUnit\":\"ms\"}\n")
	return err
}

// emitRecord emits a record's complete event, on thread tid of process
// pid, and its events.
func emitRecord(emit func(traceEvent) error, kr sessions.KindRecord, pid, tid int) error {
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
}
