package serve

import (
	"cmp"
	"net/http"
	"strconv"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/report"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

// recordsPerPage is how many records a session's table lists at once.
const recordsPerPage = 100

// sessionID reads the session id a path names.
func sessionID(r *http.Request) (sessions.SessionID, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, notFound("%q is not a session id (a decimal number)", r.PathValue("id"))
	}
	return sessions.SessionID(id), nil
}

// findSession returns the session's row, and the store that holds it: a
// bare row (explain.OrphanRow) for records whose row is gone.
func findSession(all *sessions.Records, each []stores.Store, id sessions.SessionID) (sessions.Session, string, error) {
	for _, st := range each {
		s, ok, err := st.Records.Session(id)
		if err != nil {
			return s, "", err
		}
		if ok {
			return s, st.Dir, nil
		}
	}
	for _, st := range each {
		kinds, err := st.Records.Kinds()
		if err != nil {
			return sessions.Session{}, "", err
		}
		for _, kr := range kinds {
			for _, err := range st.Records.All(kr, sessions.InSession(id)) {
				if err != nil {
					return sessions.Session{}, "", err
				}
				return explain.OrphanRow(id), st.Dir, nil
			}
		}
	}
	return sessions.Session{}, "", notFound("no session %d in the stores", id)
}

// sessionPage is a session's page: the report's drawing of it, and a page
// of its records.
type sessionPage struct {
	frame
	ID       sessions.SessionID
	Label    string
	Store    string
	Report   *report.Page
	Records  recordsTable
	Previous sessions.SessionID // the session before it of the same label; 0 for none
}

// recordsTable is a page of a session's records, in stamp order.
type recordsTable struct {
	Session sessions.SessionID
	From    uint64
	Rows    []recordRow
	Next    uint64 // the seq the next page starts from
	More    bool
}

// recordRow is a record as a table row.
type recordRow struct {
	Seq    uint64
	Kind   string
	Name   string
	Offset string
	Wall   string
	Effect string
	Status string
}

// session draws a session: the report's page of it, and its records a page
// at a time. Its JSON is records summary --json --session's object.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	from, err := seqParam(r, "from")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var (
		p   sessionPage
		sum api.Summary
	)
	err = s.cfg.Stores.Read(r.Context(), func(all *sessions.Records, each []stores.Store) error {
		row, store, err := findSession(all, each, id)
		if err != nil {
			return err
		}
		if isAPI(r) {
			sums, err := summary.Sessions(all, summary.Options{Slowest: summaryTop, Named: render.PathNamed}, sessions.InSession(id))
			if err != nil {
				return err
			}
			if len(sums) == 0 {
				return notFound("no session %d in the stores", id)
			}
			sum = api.NewSummary(sums[0])
			return nil
		}
		p = sessionPage{frame: s.frame(r, cmp.Or(render.Clean(row.Label), "session "+id.String()), "sessions"),
			ID: id, Label: render.Clean(row.Label), Store: render.Clean(store)}
		rep, err := summary.NewReport(all, row, report.Options)
		if err != nil {
			return err
		}
		if p.Report, err = report.Build(all, rep, nil); err != nil {
			return err
		}
		p.Report.RecordLink = "/sessions/" + id.String() + "/records/"
		if p.Records, err = readRecords(all, id, from); err != nil {
			return err
		}
		p.Previous, err = previousOf(all, row)
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if isAPI(r) {
		writeLines(w, []api.Summary{sum})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, "session-top", p); err != nil {
		return
	}
	if err := p.Report.WriteBody(w); err != nil {
		return
	}
	pages.ExecuteTemplate(w, "session-bottom", p)
}

// summaryTop is how many slowest records a session's JSON names, as
// records summary does by default.
const summaryTop = 3

// seqParam reads a seq from the query; 0 when not given.
func seqParam(r *http.Request, name string) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest("%s %q: want a seq, a whole number", name, v)
	}
	return n, nil
}

// readRecords reads a page of the session's records, in stamp order,
// from the seq from: a page at a time, never the session.
func readRecords(all *sessions.Records, id sessions.SessionID, from uint64) (recordsTable, error) {
	t := recordsTable{Session: id, From: from}
	kinds, err := all.Kinds()
	if err != nil {
		return t, err
	}
	for kr, err := range all.InStampOrder(kinds, sessions.InSessionFrom(id, from)) {
		if err != nil {
			return t, err
		}
		if len(t.Rows) == recordsPerPage {
			t.More, t.Next = true, kr.Stamp.Seq
			break
		}
		t.Rows = append(t.Rows, recordRow{
			Seq: kr.Stamp.Seq, Kind: render.Clean(kr.Kind), Name: cut(kr.Record.Name),
			Offset: render.Duration(kr.Stamp.Offset), Wall: render.Duration(kr.Record.Wall),
			Effect: render.Effect(&kr.Record), Status: render.Clean(render.Status(kr.Record.Status)),
		})
	}
	return t, nil
}

// recordsPage is a page of a session's records as JSON: records dump
// --json --session's objects, from the seq ?from= gives, recordsPerPage
// of them; the Link header names the next page.
func (s *Server) recordsPage(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	from, err := seqParam(r, "from")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var (
		out  []api.Record
		next uint64
		more bool
	)
	err = s.cfg.Stores.Read(r.Context(), func(all *sessions.Records, _ []stores.Store) error {
		kinds, err := all.Kinds()
		if err != nil {
			return err
		}
		for kr, err := range all.InStampOrder(kinds, sessions.InSessionFrom(id, from)) {
			if err != nil {
				return err
			}
			if len(out) == recordsPerPage {
				next, more = kr.Stamp.Seq, true
				break
			}
			out = append(out, api.NewRecord(kr))
		}
		return nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if more {
		w.Header().Set("Link", "<"+r.URL.Path+"?from="+strconv.FormatUint(next, 10)+`>; rel="next"`)
	}
	writeLines(w, out)
}

// previousOf returns the session before s of the same label, the one a
// diff compares it with by default; 0 when there is none.
func previousOf(all *sessions.Records, s sessions.Session) (sessions.SessionID, error) {
	var prev sessions.SessionID
	for row, err := range all.Sessions() {
		if err != nil {
			return 0, err
		}
		if row.ID >= s.ID {
			break // oldest first
		}
		if row.Label == s.Label {
			prev = row.ID
		}
	}
	return prev, nil
}

// cutMax is the most bytes of a name or value a table cell shows, as the
// report shows them (report.ValueMax).
const cutMax = report.ValueMax

// cut returns s cleaned and cut to cutMax, saying how much it cut.
func cut(s string) string {
	c, _ := summary.Cut(render.Clean(s), cutMax)
	return c
}

// started formats a session's start as the pages show it.
func started(s sessions.Session) string { return render.Time(time.UnixMilli(s.StartedUnixMs)) }
