package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// Resumed is how far Resume got.
type Resumed struct {
	// Unsent is how many records the cursor did not name as sent when
	// Resume began: 0 when there was nothing to send.
	Unsent int
	// Records is how many records were handed to the exporter, and
	// Accepted how many of their spans it accepted.
	Records, Accepted int
	// Tallies is how many parts of the sessions' tallies it accepted,
	// each a span after its session's records (Progress.Tallies).
	Tallies int
	// Sessions is how many sessions were sent whole and named in the
	// cursor.
	Sessions int
	// Remain is how many of the records counted unsent remain so: the
	// next run sends them.
	Remain int
}

// A ResumeError is the error of Resume: the session it was sending when it
// failed, or had sent and could not name in the cursor file.
type ResumeError struct {
	Session sessions.SessionID
	// Sent is true when the session was sent, and the cursor file could
	// not be rewritten to name it: the next run sends it again.
	Sent bool
	Err  error
}

func (e *ResumeError) Error() string {
	if e.Sent {
		return fmt.Sprintf("session %d was sent, but the cursor could not name it (the next run sends it again): %v", e.Session, e.Err)
	}
	return fmt.Sprintf("sending session %d failed: %v", e.Session, e.Err)
}

func (e *ResumeError) Unwrap() error { return e.Err }

// Resume replays the records the cursor file at path does not name as
// sent (ReadCursor; all of them when the file does not exist yet), a
// session at a time in id order, whatever order they were written in, and
// rewrites the file (Cursor.WriteFile) after each session the exporter
// accepted whole, so that it never names a record not sent. Run after each
// build, it sends each record once: a session that started first and was
// kept after a later one was sent, or records a running session wrote
// since, go with the next run.
//
// What is unsent is counted from the store's keys alone (Records.Stamps)
// before anything is sent. o.Sessions and o.Skip are Resume's to set;
// o.Progress, when set, hears of every batch, with Sessions and Spans
// counted across the run and Total the sessions to send. On error, the
// Resumed returned says how far it got, and a *ResumeError which session
// failed.
func Resume(ctx context.Context, r *sessions.Records, exp sdktrace.SpanExporter, path string, o Options) (Resumed, error) {
	var res Resumed
	c, err := ReadCursor(path)
	if err != nil {
		return res, err
	}
	unsent := map[sessions.SessionID]int{}
	inStore := map[sessions.SessionID]bool{}
	for st, err := range r.Stamps() {
		if err != nil {
			return res, err
		}
		inStore[st.Session] = true
		if !c.Sent(st) {
			unsent[st.Session]++
			res.Unsent++
		}
	}
	res.Remain = res.Unsent
	todo := slices.Sorted(maps.Keys(unsent))
	progress := o.Progress
	for i, id := range todo {
		var now seqSet
		n := 0
		o.Sessions = []sessions.SessionID{id}
		o.Skip = func(st sessions.Stamp) bool {
			if c.Sent(st) {
				return true
			}
			now.add(st.Seq)
			res.Records++
			n++
			return false
		}
		o.Progress = nil
		if progress != nil {
			o.Progress = func(p Progress) {
				progress(Progress{Sessions: i + p.Sessions, Total: len(todo), Spans: res.Accepted + p.Spans})
			}
		}
		p, err := Replay(ctx, r, exp, o)
		res.Accepted += p.Spans
		res.Tallies += p.Tallies
		if errors.Is(err, ErrNoSession) {
			continue // pruned since it was counted
		}
		if err != nil {
			return res, &ResumeError{Session: id, Err: err}
		}
		// Each session is flushed by its replay: it was accepted.
		c.add(id, now)
		if err := c.WriteFile(path, func(id sessions.SessionID) bool { return inStore[id] }); err != nil {
			return res, &ResumeError{Session: id, Sent: true, Err: err}
		}
		// Records written since they were counted were sent too.
		res.Remain = max(res.Remain-n, 0)
		res.Sessions++
	}
	return res, nil
}
