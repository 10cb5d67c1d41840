package serve

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/sessions"
)

// The sessions page.
const (
	// perPage is how many sessions a page lists.
	perPage = 50
	// keptLook bounds how many records are read to find what kept a
	// session: its first record that changed something comes within the
	// byte budget a session holds before it is kept (1 MiB by default),
	// so past this the session is one a reader cannot tell (records of
	// older stores, or whose row went).
	keptLook = 20_000
)

// sessionRow is a session as the sessions page lists it, and as its JSON
// says it: records sessions --json's object, with the store that holds
// it and what kept it.
type sessionRow struct {
	api.Session
	// Store is the store that holds the session, as --dir named it.
	Store string `json:"store"`
	// Kept is the kind of the first record that changed something: what
	// kept the session; "" when none is found.
	Kept string `json:"kept_by"`
	// KeptName is that record's name, and KeptSeq its seq.
	KeptName string `json:"kept_by_name"`
	KeptSeq  uint64 `json:"kept_by_seq"`

	Service string `json:"-"`
	Started string `json:"-"`
	Total   int    `json:"-"`
}

// sessionFilter is what the sessions page is asked to list.
type sessionFilter struct {
	Service, Label, Kept string
	Since, Until         string // as given: a date, or a date and time
	since, until         time.Time
	Page                 int // from 1
}

// parseFilter reads the filter from a request's query.
func parseFilter(q url.Values) (sessionFilter, error) {
	f := sessionFilter{
		Service: q.Get("service"), Label: q.Get("label"), Kept: q.Get("kept"),
		Since: q.Get("since"), Until: q.Get("until"), Page: 1,
	}
	var err error
	if f.since, err = parseWhen(f.Since, false); err != nil {
		return f, badRequest("since %q: %v", f.Since, err)
	}
	if f.until, err = parseWhen(f.Until, true); err != nil {
		return f, badRequest("until %q: %v", f.Until, err)
	}
	if p := q.Get("page"); p != "" {
		if f.Page, err = strconv.Atoi(p); err != nil || f.Page < 1 {
			return f, badRequest("page %q: want a page number, from 1", p)
		}
	}
	return f, nil
}

// parseWhen reads a time a filter gives: a date (its start, or with end
// its end), a date and time in the browser's form (2006-01-02T15:04), or
// RFC 3339; all in UTC unless said. "" is the zero time.
func parseWhen(s string, end bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			t = t.Add(24*time.Hour - time.Nanosecond)
		}
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errBadTime
}

type errString string

func (e errString) Error() string { return string(e) }

const errBadTime = errString("want a date (2006-01-02), or a date and time (2006-01-02T15:04, UTC)")

// matches reports whether the session row passes the filter but for
// what kept it, which costs a read.
func (f *sessionFilter) matches(s sessions.Session) bool {
	if f.Service != "" && serviceOf(s) != f.Service {
		return false
	}
	if f.Label != "" && !strings.Contains(strings.ToLower(s.Label), strings.ToLower(f.Label)) {
		return false
	}
	started := s.Started()
	if !f.since.IsZero() && started.Before(f.since) || !f.until.IsZero() && started.After(f.until) {
		return false
	}
	return true
}

// serviceOf returns the session's service.name, "" when it has none.
func serviceOf(s sessions.Session) string {
	for _, kv := range s.Resource {
		if kv.Key == "service.name" {
			return kv.Value.String()
		}
	}
	return ""
}

// sessionsPage is the sessions page's data.
type sessionsPage struct {
	frame
	Filter   sessionFilter
	Rows     []sessionRow
	Matched  int  // sessions that pass the filter, or at least, when Kept is asked
	More     bool // Matched is a lower bound: the kept filter stopped when the page was full
	Services []string
	Kinds    []string
	Prev     string // the previous page's query, "" on the first
	Next     string // the next page's query, "" on the last
	Total    int    // sessions in the stores
}

// sessions lists the sessions, newest first, a page at a time.
func (s *Server) sessions(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := sessionsPage{frame: s.frame(r, "sessions", "sessions"), Filter: f}
	err = s.cfg.Stores.Read(r.Context(), func(all *sessions.Records, each []stores.Store) error {
		return listSessions(r.Context(), all, each, &p)
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if p.Next != "" {
		w.Header().Set("Link", "<"+r.URL.Path+"?"+p.Next+`>; rel="next"`)
	}
	if isAPI(r) {
		writeLines(w, p.Rows)
		return
	}
	s.page(w, "sessions", p)
}

// listSessions fills the page: the rows of every store, newest first, each
// with the store that holds it (the first that does, as sessions.Union
// reads it), filtered, and the page asked of them with what kept each.
func listSessions(ctx context.Context, all *sessions.Records, each []stores.Store, p *sessionsPage) error {
	type held struct {
		s     sessions.Session
		store string
	}
	var rows []held
	seen := map[sessions.SessionID]bool{}
	services := map[string]bool{}
	for _, st := range each {
		for row, err := range st.Records.Sessions() {
			if err != nil {
				return err
			}
			if seen[row.ID] {
				continue
			}
			seen[row.ID] = true
			services[serviceOf(row)] = true
			rows = append(rows, held{row, st.Dir})
		}
	}
	p.Total = len(rows)
	delete(services, "")
	p.Services = slices.Sorted(func(yield func(string) bool) {
		for s := range services {
			if !yield(s) {
				return
			}
		}
	})
	kinds, err := all.Kinds()
	if err != nil {
		return err
	}
	p.Kinds = slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return k == sessions.MarksKind })
	slices.SortFunc(rows, func(a, b held) int { return cmp.Compare(b.s.ID, a.s.ID) }) // newest first
	f := &p.Filter
	skip := (f.Page - 1) * perPage
	for _, h := range rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !f.matches(h.s) {
			continue
		}
		var row sessionRow
		if f.Kept != "" || p.Matched >= skip && len(p.Rows) < perPage {
			row = sessionRow{Store: h.store}
			if err := keptBy(all, kinds, h.s.ID, &row); err != nil {
				return err
			}
			if f.Kept != "" && row.Kept != f.Kept {
				continue
			}
		}
		p.Matched++
		if p.Matched <= skip {
			continue
		}
		if len(p.Rows) == perPage {
			// What kept a session is read only for the sessions listed:
			// with that filter, the count stops at a page more.
			if f.Kept != "" {
				p.More = true
				break
			}
			continue
		}
		row.Session = api.NewSession(h.s, nil)
		row.Service = render.Clean(serviceOf(h.s))
		row.Started = render.Time(time.UnixMilli(h.s.StartedUnixMs))
		p.Rows = append(p.Rows, row)
	}
	if err := countRecords(all, p.Rows); err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"service": f.Service, "label": f.Label, "kept": f.Kept, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Page > 1 {
		q.Set("page", strconv.Itoa(f.Page-1))
		p.Prev = q.Encode()
	}
	if p.More || p.Matched > f.Page*perPage {
		q.Set("page", strconv.Itoa(f.Page+1))
		p.Next = q.Encode()
	}
	return nil
}

// countRecords sets each row's records per kind, as records sessions
// counts them: by their keys alone.
func countRecords(r *sessions.Records, rows []sessionRow) error {
	if len(rows) == 0 {
		return nil
	}
	counts, err := r.Counts()
	if err != nil {
		return err
	}
	for i := range rows {
		row := &rows[i]
		row.Records = counts[row.ID]
		if row.Records == nil {
			row.Records = map[string]int{}
		}
		for _, n := range row.Records {
			row.Total += n
		}
	}
	return nil
}

// keptBy sets what kept the session: its first record, in stamp order,
// that changed something, looking at no more than keptLook records.
func keptBy(r *sessions.Records, kinds []string, id sessions.SessionID, row *sessionRow) error {
	n := 0
	for kr, err := range r.InStampOrder(kinds, sessions.InSession(id)) {
		if err != nil {
			return err
		}
		if kr.Record.Effect == sessions.Changed {
			row.Kept, row.KeptName, row.KeptSeq = kr.Kind, kr.Record.Name, kr.Stamp.Seq
			return nil
		}
		if n++; n >= keptLook {
			break
		}
	}
	return nil
}
