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
)

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

// get sends a GET for path with query, and returns the answer when it is
// 200 OK; else an error saying why, or (for 404) the body, with ok false,
// for the caller to read.
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
// matching ErrNotJaeger.
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	const path = "/api/v3/services"
	resp, err := j.get(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, j.answerError(path, resp)
	}
	// {"services": [...]}; {} when it knows none (empty lists are left
	// out). Any other answer is something else's.
	var v map[string]json.RawMessage
	var services []string
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&v)
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

// findTraces asks for at most n traces of service with a span starting in
// [from, to] (both included), as stored (raw: Jaeger's adjustments, which
// move spans in time and drop duplicates, are not made), and calls each
// with every ResourceSpans of the answer, in order, as it is read.
func (j *Jaeger) findTraces(ctx context.Context, service string, from, to time.Time, n int, each func(*resourceSpans) error) (answer, error) {
	const path = "/api/v3/traces"
	q := url.Values{
		"query.service_name":   {service},
		"query.start_time_min": {from.UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {to.UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {strconv.Itoa(n)},
		"query.raw_traces":     {"true"},
	}
	resp, err := j.get(ctx, path, q)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		// Jaeger says "No traces found" with a 404, which a path it does
		// not serve answers too: tell them apart by what it says.
		if err := j.answerError(path, resp); !strings.Contains(err.Error(), "No traces found") {
			return answer{}, err
		}
		return answer{}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return answer{}, j.answerError(path, resp)
	}
	// Each trace's first span in the window: zero for a trace whose
	// spans there are another service's.
	first := map[[16]byte]time.Time{}
	err = readTraces(resp.Body, func(rs *resourceSpans) error {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				id, t := s.TraceID.trace(), s.StartTime()
				f, seen := first[id]
				if t.Before(from) || t.After(to) {
					t = time.Time{}
				}
				if !seen || !t.IsZero() && (f.IsZero() || t.Before(f)) {
					first[id] = t
				}
			}
		}
		return each(rs)
	})
	if err != nil {
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
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

// readTraces reads an api_v3 answer, {"result": {"resourceSpans": [...]}},
// a ResourceSpans at a time, so that what is held is one of them, not the
// whole answer.
func readTraces(r io.Reader, each func(*resourceSpans) error) error {
	dec := json.NewDecoder(r)
	for _, key := range []string{"result", "resourceSpans"} {
		if found, err := enter(dec, key); err != nil || !found {
			return err // an answer without spans holds none
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return fmt.Errorf("OTLP JSON: resourceSpans is not a list (%v)", err)
	}
	for dec.More() {
		var rs resourceSpans
		if err := dec.Decode(&rs); err != nil {
			return fmt.Errorf("OTLP JSON: %w", err)
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				s.scope.Name, s.scope.Version = ss.Scope.Name, ss.Scope.Version
			}
		}
		if err := each(&rs); err != nil {
			return err
		}
	}
	return nil
}

// enter reads an object's opening brace and its keys up to key, skipping
// the values of the others, and leaves the decoder at key's value; false
// when the object has no such key.
func enter(dec *json.Decoder, key string) (bool, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false, fmt.Errorf("OTLP JSON: want an object holding %q (%v)", key, err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false, fmt.Errorf("OTLP JSON: %w", err)
		}
		if t == key {
			return true, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false, fmt.Errorf("OTLP JSON: %w", err)
		}
	}
	return false, nil
}
