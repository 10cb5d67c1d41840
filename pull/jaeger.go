package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The conditions of a query service that a caller acts on, matched with
// errors.Is.
var (
	// ErrUnreachable is matched by the error of a request that got no
	// answer: nothing listens there, the name does not resolve, TLS failed.
	ErrUnreachable = errors.New("otelrecords: the query service cannot be reached")
	// ErrNotJaeger is matched by the error of a request answered by
	// something other than a Jaeger query service's api_v3: a page that
	// is not found, HTML, JSON of another shape. The message says what
	// came back.
	ErrNotJaeger = errors.New("otelrecords: not a Jaeger query service")
	// ErrRefused is matched by the error of a request the query service
	// refused (401, 403): it wants credentials, or other ones.
	ErrRefused = errors.New("otelrecords: the query service refused the request")

	// ErrAnswerTimeout is matched by the error of an answer not read whole
	// within its deadline (Options.AnswerTimeout): a query service that
	// sends slowly, or never ends its answer.
	ErrAnswerTimeout = errors.New("otelrecords: the query service did not answer in time")
	// ErrAnswerTooLarge is matched by the error of an answer larger than
	// Options.MaxAnswerBytes, or holding a Resource or scope larger than
	// Options.MaxSpanBytes.
	ErrAnswerTooLarge = errors.New("otelrecords: the query service's answer is too large")
	// ErrTooManyQueries is matched by the error of a pull that would ask
	// more queries than Options.MaxQueries, or for more traces at one
	// instant than a page may hold.
	ErrTooManyQueries = errors.New("otelrecords: the pull needs too many queries")
)

// servicesMaxBytes bounds the answer listing the services: names, a few
// kilobytes in practice.
const servicesMaxBytes = 16 << 20

// Jaeger is a Jaeger query service's api_v3 over HTTP (port 16686 by
// default), which answers with OTLP: the services it knows, and the
// traces of a service within a time range. It reads only.
type Jaeger struct {
	base   *url.URL
	client *http.Client
	header http.Header
}

// NewJaeger returns the query service at base: http://host:16686 or
// https://host, with the path a query service behind a proxy is served
// under, if any. Requests go through client (http.DefaultClient when
// nil), with header on each (an API key, say). base must not hold
// credentials: messages name it.
func NewJaeger(base string, client *http.Client, header http.Header) (*Jaeger, error) {
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return nil, err
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%s: want an http:// or https:// URL", base)
	case u.Host == "":
		return nil, fmt.Errorf("%s: no host", base)
	case u.User != nil:
		return nil, fmt.Errorf("%s: the URL holds credentials; give them as a header", u.Redacted())
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	if client == nil {
		client = http.DefaultClient
	}
	return &Jaeger{base: u, client: client, header: header.Clone()}, nil
}

// String returns the query service's URL.
func (j *Jaeger) String() string { return j.base.String() }

// within returns ctx with the deadline of one answer, from sending the
// request to the answer's last byte: d, or the client's own Timeout when
// it is shorter. The error of a request or a read past it is deadline's.
func (j *Jaeger) within(ctx context.Context, path string, d time.Duration) (context.Context, context.CancelFunc, func(error) error) {
	if t := j.client.Timeout; t > 0 && (d <= 0 || t < d) {
		d = t
	}
	late := fmt.Errorf("%w: %s%s did not answer whole within %v, the deadline for each answer", ErrAnswerTimeout, j, path, d)
	ctx, cancel := context.WithTimeoutCause(ctx, d, late)
	deadline := func(err error) error {
		if err == nil {
			return nil
		}
		var ne interface{ Timeout() bool }
		if context.Cause(ctx) == late || errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
			return late // ours, or the client's Timeout
		}
		return err
	}
	return ctx, cancel, deadline
}

// answerReader reads an answer, and fails past max bytes.
type answerReader struct {
	r    io.Reader
	n    int64
	max  int64
	what string
}

func (a *answerReader) Read(p []byte) (int, error) {
	if a.n > a.max {
		return 0, fmt.Errorf("%w: %s answered more than %d bytes, the limit on an answer", ErrAnswerTooLarge, a.what, a.max)
	}
	if rest := a.max + 1 - a.n; int64(len(p)) > rest {
		p = p[:rest] // one byte past the limit says there is more
	}
	n, err := a.r.Read(p)
	a.n += int64(n)
	if a.n > a.max {
		return n, fmt.Errorf("%w: %s answered more than %d bytes, the limit on an answer", ErrAnswerTooLarge, a.what, a.max)
	}
	return n, err
}

// get sends a GET for path with query, and returns the answer, whatever
// its status.
func (j *Jaeger) get(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := *j.base
	u.Path += path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range j.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	resp, err := j.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it names the URL, which messages name already
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrUnreachable, j, err)
	}
	return resp, nil
}

// answerError is the error for an answer other than 200 OK, with what the
// body says (Jaeger's {"error": {"message": ...}}, or its first line).
func (j *Jaeger) answerError(path string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	what := strings.TrimSpace(string(body))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		what = e.Error.Message
	}
	what, _, _ = strings.Cut(what, "\n")
	what = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, what)
	if len(what) > 200 {
		what = what[:200] + "..."
	}
	sentinel := ErrNotJaeger
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		sentinel = ErrRefused
	case http.StatusBadRequest, http.StatusInternalServerError, http.StatusServiceUnavailable:
		if json.Valid(body) {
			// Jaeger's own error: it is one, and says what went wrong.
			return fmt.Errorf("%s%s answered %s: %s", j, path, resp.Status, what)
		}
	}
	if what != "" {
		what = ": " + what
	}
	return fmt.Errorf("%w: %s%s answered %s%s", sentinel, j, path, resp.Status, what)
}

// Services returns the services the query service knows, which also
// checks that it is one: anything else at that address gives an error
// matching ErrNotJaeger. Its answer is read within DefaultAnswerTimeout
// (or the client's Timeout, when shorter) and 16 MiB.
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	return j.services(ctx, DefaultAnswerTimeout)
}

func (j *Jaeger) services(ctx context.Context, timeout time.Duration) ([]string, error) {
	const path = "/api/v3/services"
	ctx, cancel, deadline := j.within(ctx, path, timeout)
	defer cancel()
	resp, err := j.get(ctx, path, nil)
	if err != nil {
		return nil, deadline(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, deadline(j.answerError(path, resp))
	}
	// {"services": [...]}; {} when it knows none (empty lists are left
	// out). Any other answer is something else's.
	var v map[string]json.RawMessage
	var services []string
	err = json.NewDecoder(&answerReader{r: resp.Body, max: servicesMaxBytes, what: j.String() + path}).Decode(&v)
	if err = deadline(err); errors.Is(err, ErrAnswerTimeout) || errors.Is(err, ErrAnswerTooLarge) {
		return nil, err
	}
	if list, ok := v["services"]; err == nil && ok {
		err = json.Unmarshal(list, &services)
	}
	if err != nil || len(v) > 1 || len(v) == 1 && services == nil {
		return nil, fmt.Errorf("%w: %s%s answered with no list of services (%s)", ErrNotJaeger, j, path, resp.Header.Get("Content-Type"))
	}
	return services, nil
}

// answer is what findTraces learnt of an answer: how many traces it held,
// and when the middle one (by its first span in the window) started.
type answer struct {
	traces int
	middle time.Time
}

// answerLimits are what one answer may take.
type answerLimits struct {
	timeout time.Duration // to read it whole
	bytes   int64         // its size
	span    int           // the size of a span, a Resource or a scope in it
}

// findTraces asks for at most n traces of service with a span starting in
// [from, to] (both included), as stored (raw: Jaeger's adjustments, which
// move spans in time and drop duplicates, are not made), and hands what
// it reads to sink, a span at a time, as it is read. An answer holding
// more than n traces is no query service's.
func (j *Jaeger) findTraces(ctx context.Context, service string, from, to time.Time, n int, lim answerLimits, sink traceSink) (answer, error) {
	const path = "/api/v3/traces"
	q := url.Values{
		"query.service_name":   {service},
		"query.start_time_min": {from.UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {to.UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {strconv.Itoa(n)},
		"query.raw_traces":     {"true"},
	}
	ctx, cancel, deadline := j.within(ctx, path, lim.timeout)
	defer cancel()
	resp, err := j.get(ctx, path, q)
	if err != nil {
		return answer{}, deadline(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		// Jaeger says "No traces found" with a 404, which a path it does
		// not serve answers too: tell them apart by what it says.
		if err := j.answerError(path, resp); !strings.Contains(err.Error(), "No traces found") {
			return answer{}, deadline(err)
		}
		return answer{}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return answer{}, deadline(j.answerError(path, resp))
	}
	// Each trace's first span in the window: zero for a trace whose
	// spans there are another service's. At most n of them.
	first := map[[16]byte]time.Time{}
	note := func(id [16]byte, t time.Time) error {
		f, seen := first[id]
		if !seen && len(first) == n {
			return fmt.Errorf("%w: %s%s answered more than the %d traces asked for", ErrNotJaeger, j, path, n)
		}
		if t.Before(from) || t.After(to) {
			t = time.Time{}
		}
		if !seen || !t.IsZero() && (f.IsZero() || t.Before(f)) {
			first[id] = t
		}
		return nil
	}
	counted := traceSink{
		resource: sink.resource,
		span: func(s *span) error {
			if err := note(s.TraceID.trace(), s.StartTime()); err != nil {
				return err
			}
			return sink.span(s)
		},
		stepped: func(id [16]byte, known bool) error {
			if known {
				if err := note(id, time.Time{}); err != nil {
					return err
				}
			}
			return sink.stepped(id, known)
		},
	}
	body := &answerReader{r: resp.Body, max: lim.bytes, what: j.String() + path}
	if err := deadline(readTraces(body, lim.span, counted)); err != nil {
		switch {
		case errors.Is(err, ErrAnswerTimeout), errors.Is(err, ErrAnswerTooLarge), errors.Is(err, ErrNotJaeger):
			return answer{}, err
		case ctx.Err() != nil:
			return answer{}, context.Cause(ctx) // the caller's
		}
		return answer{}, fmt.Errorf("%s%s: %w", j, path, err)
	}
	starts := make([]time.Time, 0, len(first))
	for _, t := range first {
		if !t.IsZero() {
			starts = append(starts, t)
		}
	}
	slices.SortFunc(starts, time.Time.Compare)
	a := answer{traces: len(first)}
	if len(starts) > 0 {
		a.middle = starts[len(starts)/2]
	}
	return a, nil
}
