package pull_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/sessions"
)

// hostile is a query service that misbehaves as issue 44 found one can: it
// knows one service, svc, and answers every query for its traces with
// what traces writes, as it writes it. What it writes stops when the
// client goes.
type hostile struct {
	services func(w http.ResponseWriter, r *http.Request) // nil: {"services": ["svc"]}
	traces   func(w io.Writer, r *http.Request)
}

func (h hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v3/services":
		if h.services != nil {
			h.services(w, r)
			return
		}
		io.WriteString(w, `{"services": ["svc"]}`)
	case "/api/v3/traces":
		h.traces(flushing{w}, r)
	default:
		http.NotFound(w, r)
	}
}

// flushing sends what is written at once.
type flushing struct{ w http.ResponseWriter }

func (f flushing) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	f.w.(http.Flusher).Flush()
	return n, err
}

func serveHostile(t testing.TB, h hostile) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// hostileStart is when the spans a hostile service makes up start.
var hostileStart = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// recordJSON is a ResourceSpans holding one span that carries a record:
// seq 0 of kind work of its own session (id), in trace trace, starting at
// start; extra is more of the span's attributes (",{...}").
func recordJSON(id sessions.SessionID, trace uint64, start time.Time, extra string) string {
	return fmt.Sprintf(`{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}},`+
		`{"key":"records.session.id","value":{"stringValue":"%d"}}]},"scopeSpans":[{"scope":{"name":"hostile"},"spans":[`+
		`{"traceId":"%032x","spanId":"%016x","name":"work","kind":1,"startTimeUnixNano":"%d","endTimeUnixNano":"%d",`+
		`"attributes":[{"key":"records.kind","value":{"stringValue":"work"}},{"key":"records.seq","value":{"intValue":"0"}}%s]}]}]}`,
		uint64(id), trace, trace+1, start.UnixNano(), start.UnixNano()+1000, extra)
}

// repeat writes n bytes of c, a chunk at a time; false when the client
// went.
func repeat(w io.Writer, c byte, n int64) bool {
	chunk := bytes.Repeat([]byte{c}, 64<<10)
	for n > 0 {
		m := min(n, int64(len(chunk)))
		if _, err := w.Write(chunk[:m]); err != nil {
			return false
		}
		n -= m
	}
	return true
}

// drip writes s a byte every every, until the client goes.
func drip(w io.Writer, r *http.Request, s string, every time.Duration) {
	for i := 0; ; i = (i + 1) % len(s) {
		if _, err := w.Write([]byte{s[i]}); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(every):
		}
	}
}

// dripping answers every query for traces a byte at a time.
func dripping(every time.Duration) hostile {
	return hostile{traces: func(w io.Writer, r *http.Request) {
		drip(w, r, `{"result": {"resourceSpans": [`, every)
	}}
}

// endless answers every query for traces with a list of spans that never
// ends, of one trace, each of a session of its own.
func endless() hostile {
	var next atomic.Uint64
	return hostile{traces: func(w io.Writer, r *http.Request) {
		io.WriteString(w, `{"result": {"resourceSpans": [`)
		for i := 0; ; i++ {
			n := next.Add(1)
			sep := ","
			if i == 0 {
				sep = ""
			}
			if _, err := io.WriteString(w, sep+recordJSON(sessions.SessionID(hostileStart.UnixNano())+sessions.SessionID(n), 1, hostileStart, "")); err != nil {
				return
			}
		}
	}}
}

// junkFirst answers with junk bytes of junk before "result", which holds
// one record.
func junkFirst(junk int64) hostile {
	return hostile{traces: func(w io.Writer, r *http.Request) {
		io.WriteString(w, `{"junk": "`)
		if repeat(w, 'j', junk) {
			io.WriteString(w, `", "result": {"resourceSpans": [`+recordJSON(sessions.SessionID(hostileStart.UnixNano()), 1, hostileStart, "")+`]}}`)
		}
	}}
}

// hugeSpan answers with one ResourceSpans whose first span has an
// attribute of size bytes, and whose second is a record.
func hugeSpan(size int64) hostile {
	return hostile{traces: func(w io.Writer, r *http.Request) {
		rs := recordJSON(sessions.SessionID(hostileStart.UnixNano()), 1, hostileStart, "")
		at := strings.Index(rs, `{"traceId"`)
		io.WriteString(w, `{"result": {"resourceSpans": [`+rs[:at])
		io.WriteString(w, `{"traceId":"000000000000000000000000000000ff","spanId":"00000000000000ff","name":"huge","attributes":[{"key":"huge","value":{"stringValue":"`)
		if repeat(w, 'h', size) {
			io.WriteString(w, `"}}]},`+rs[at:]+`]}}`)
		}
	}}
}

// fullPages answers every query with as many traces as it asks for, each
// a record of a session of its own, starting across the window asked;
// with instantsFull false, a window of one instant with one trace fewer
// (so that the pull never asks a larger page, and goes on splitting).
func fullPages(instantsFull bool) hostile {
	var next atomic.Uint64
	return hostile{traces: func(w io.Writer, r *http.Request) {
		q := r.URL.Query()
		n, _ := strconv.Atoi(q.Get("query.num_traces"))
		from, _ := time.Parse(time.RFC3339Nano, q.Get("query.start_time_min"))
		to, _ := time.Parse(time.RFC3339Nano, q.Get("query.start_time_max"))
		if !instantsFull && from.Equal(to) {
			n--
		}
		io.WriteString(w, `{"result": {"resourceSpans": [`)
		for i := range n {
			id := next.Add(1)
			start := from.Add(time.Duration(float64(to.Sub(from)) * float64(i) / float64(n)))
			sep := ","
			if i == 0 {
				sep = ""
			}
			if _, err := io.WriteString(w, sep+recordJSON(sessions.SessionID(hostileStart.UnixNano())+sessions.SessionID(id), id, start, "")); err != nil {
				return
			}
		}
		io.WriteString(w, `]}}`)
	}}
}

// pullFrom pulls from the query service at url into a new store, and
// returns what the pull said and the store.
func pullFromURL(t *testing.T, url string, o pull.Options) (pull.Progress, error, *sessions.MemStore) {
	t.Helper()
	mem := sessions.NewMemStore()
	j, err := pull.NewJaeger(url, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pull.Pull(context.Background(), j, sessions.NewRecords(mem), o)
	return p, err, mem
}

// A query service that sends a byte at a time ends the pull at the
// deadline of the whole answer, with an error naming it, and nothing
// written — whether it drips its list of services or of traces.
func TestPullEndsAgainstADrippingServer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	services := dripping(20 * time.Millisecond)
	services.services = func(w http.ResponseWriter, r *http.Request) {
		drip(flushing{w}, r, `{"services": ["svc"`, 20*time.Millisecond)
	}
	for name, h := range map[string]hostile{"traces": dripping(20 * time.Millisecond), "services": services} {
		began := time.Now()
		p, err, mem := pullFromURL(t, serveHostile(t, h), pull.Options{AnswerTimeout: timeout})
		took := time.Since(began)
		if !errors.Is(err, pull.ErrAnswerTimeout) || !strings.Contains(err.Error(), "within 300ms, the deadline for each answer") {
			t.Errorf("%s: %v; want the deadline named", name, err)
		}
		if took > 10*timeout || mem.Len() != 0 || p.Records != 0 {
			t.Errorf("%s: ended after %v, %d entries written (%+v); want within %v, nothing", name, took, mem.Len(), p, timeout)
		}
	}
}

// An answer that never ends its list ends the pull at the answer limit,
// or at the deadline, whichever comes first, and nothing of what was read
// is written: a pull writes only once it has read everything.
func TestPullEndsAgainstAnEndlessAnswer(t *testing.T) {
	url := serveHostile(t, endless())
	p, err, mem := pullFromURL(t, url, pull.Options{MaxAnswerBytes: 4 << 20})
	if !errors.Is(err, pull.ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than 4194304 bytes, the limit on an answer") {
		t.Errorf("a 4 MiB limit: %v; want the limit named", err)
	}
	if p.Taken < 1000 || p.Records != 0 || mem.Len() != 0 {
		t.Errorf("a 4 MiB limit: %+v, %d entries written; want records taken, none written", p, mem.Len())
	}
	_, err, mem = pullFromURL(t, url, pull.Options{AnswerTimeout: 500 * time.Millisecond})
	if !errors.Is(err, pull.ErrAnswerTimeout) || mem.Len() != 0 {
		t.Errorf("a 500ms deadline: %v, %d entries written; want the deadline, nothing", err, mem.Len())
	}
}

// allocated returns how many bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Junk before "result" is read past, not held, whatever its size: a pull
// of an answer with 64 MiB of it allocates a few MiB, and takes the
// record after it.
func TestPullSkipsJunkWithoutHoldingIt(t *testing.T) {
	url := serveHostile(t, junkFirst(64<<20))
	var p pull.Progress
	var err error
	n := allocated(func() { p, err, _ = pullFromURL(t, url, pull.Options{}) })
	t.Logf("64 MiB of junk: %.1f MiB allocated", float64(n)/(1<<20))
	if err != nil || p.Records != 1 {
		t.Errorf("%+v, %v; want the record after the junk", p, err)
	}
	if n > 8<<20 {
		t.Errorf("allocated %.1f MiB reading past 64 MiB of junk; want under 8", float64(n)/(1<<20))
	}
}

// A span past the span limit is stepped over, read but not held, and
// counted; the span after it is taken.
func TestPullStepsOverASpanPastTheLimit(t *testing.T) {
	url := serveHostile(t, hugeSpan(64<<20))
	var p pull.Progress
	var err error
	n := allocated(func() { p, err, _ = pullFromURL(t, url, pull.Options{MaxSpanBytes: 1 << 20}) })
	t.Logf("a span of 64 MiB: %.1f MiB allocated", float64(n)/(1<<20))
	if err != nil || p.Records != 1 || p.TooLarge != 1 || p.Spans != 2 {
		t.Errorf("%+v, %v; want the huge span too large, the other taken", p, err)
	}
	if n > 12<<20 {
		t.Errorf("allocated %.1f MiB stepping over a span of 64 MiB; want under 12", float64(n)/(1<<20))
	}
}

// A query service whose every answer is full, whatever window is asked,
// ends the pull at the query limit, and nothing is written.
func TestPullEndsAgainstFullPagesForever(t *testing.T) {
	url := serveHostile(t, fullPages(false))
	p, err, mem := pullFromURL(t, url, pull.Options{PageTraces: 10, MaxQueries: 40})
	if !errors.Is(err, pull.ErrTooManyQueries) || !strings.Contains(err.Error(), "more than 40, the limit on a pull") {
		t.Errorf("%v; want the query limit named", err)
	}
	if p.Queries != 40 || mem.Len() != 0 {
		t.Errorf("%+v, %d entries written; want 40 queries, nothing written", p, mem.Len())
	}
}

// A window of one instant whose every answer is full is asked again with
// a page twice as large, up to a bound: a query service that answers full
// pages at one instant ends the pull.
func TestPullBoundsThePageOfAnInstant(t *testing.T) {
	h := fullPages(true)
	all := h.traces
	h.traces = func(w io.Writer, r *http.Request) {
		q := r.URL.Query()
		q.Set("query.start_time_max", q.Get("query.start_time_min")) // every trace at the window's start
		r2 := r.Clone(r.Context())
		r2.URL.RawQuery = q.Encode()
		all(w, r2)
	}
	defer pull.SetMaxPage(80)()
	p, err, mem := pullFromURL(t, serveHostile(t, h), pull.Options{PageTraces: 10})
	if !errors.Is(err, pull.ErrTooManyQueries) || !strings.Contains(err.Error(), "more than a query may ask for") || mem.Len() != 0 {
		t.Errorf("%+v, %v; want the page bound named, nothing written", p, err)
	}
	if p.Queries > 5 {
		t.Errorf("%d queries; want the page to reach its bound in 4 (10, 20, 40, 80)", p.Queries)
	}
}

// rowsOnly answers with n ResourceSpans, each the row of a session of its
// own, without a span.
func rowsOnly(n int) hostile {
	return hostile{traces: func(w io.Writer, r *http.Request) {
		io.WriteString(w, `{"result": {"resourceSpans": [`)
		for i := range n {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(w, `%s{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}},`+
				`{"key":"records.session.id","value":{"stringValue":"%d"}},{"key":"records.session.started_unix_ms","value":{"intValue":"%d"}}]},"scopeSpans":[]}`,
				sep, hostileStart.UnixNano()+int64(i)*1e6, hostileStart.UnixMilli()+int64(i))
		}
		io.WriteString(w, `]}}`)
	}}
}

// countingStore counts the writes into a MemStore.
type countingStore struct {
	*sessions.MemStore
	writes atomic.Int64
}

func (c *countingStore) Write(entries []sessions.Entry) error {
	c.writes.Add(1)
	return c.MemStore.Write(entries)
}

// An answer of session rows alone is staged a batch at a time, as one of
// records is (not held until the answer ends), and every row is written.
func TestPullStagesRowsInBatches(t *testing.T) {
	defer pull.SetPutBatch(7)()
	stage := &countingStore{MemStore: sessions.NewMemStore()}
	p, err, mem := pullFromURL(t, serveHostile(t, rowsOnly(100)), pull.Options{Staging: stage})
	if err != nil || p.Sessions != 100 || mem.Len() != 100 {
		t.Errorf("%+v, %v, %d entries; want 100 sessions' rows", p, err, mem.Len())
	}
	if n := stage.writes.Load(); n < 100/7 {
		t.Errorf("%d writes into the staging store; want a batch of 7 at a time", n)
	}
}
