package serve

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/cmd/records/internal/views"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// recordPage is a record's page: what it holds, the records it ran inside,
// and why it was done.
type recordPage struct {
	frame
	Session  sessions.SessionID
	Label    string
	Seq      uint64
	Kind     string
	Name     string
	Offset   string
	Wall     string
	Effect   string
	Verdict  string
	Status   string
	Span     string // trace, span and parent span ids
	Attrs    []attrRow
	Events   []eventRow
	Chain    []chainRow // the records it ran inside, outermost first
	Why      string     // why it was done, as records why says it; "" when it has no key
	WhyKey   string     // the key attribute Why is of
	WhyLink  string     // the key's history
	Children int        // records directly inside it
}

// attrRow is an attribute, with the link to its history.
type attrRow struct {
	Key, Value string
	Input      bool   // the span started with it
	IsKey      bool   // an attribute a key is matched by (key, *.key)
	History    string // the why page of this kind, key and value
}

// eventRow is one of a record's events.
type eventRow struct {
	Offset, Name, Attrs string
}

// chainRow is a record the record ran inside.
type chainRow struct {
	Seq        uint64
	Kind, Name string
	Wall       string
	Depth      int
}

// record shows one record of a session. Its JSON is records dump --json's
// object of it.
func (s *Server) record(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil {
		s.fail(w, r, notFound("%q is not a seq (a whole number)", r.PathValue("seq")))
		return
	}
	var (
		p   recordPage
		rec api.Record
	)
	err = s.cfg.Stores.Read(r.Context(), func(all *sessions.Records, each []stores.Store) error {
		kr, err := findRecord(all, id, seq)
		if err != nil {
			return err
		}
		if isAPI(r) {
			rec = api.NewRecord(kr)
			return nil
		}
		row, _, err := findSession(all, each, id)
		if err != nil {
			return err
		}
		p = newRecordPage(s.frame(r, render.OrDash(cut(kr.Record.Name)), "sessions"), kr)
		p.Label = render.Clean(row.Label)
		if err := p.placeInTree(all, kr); err != nil {
			return err
		}
		return p.sayWhy(r, all, kr)
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if isAPI(r) {
		writeLines(w, []api.Record{rec})
		return
	}
	s.page(w, "record", p)
}

// findRecord reads the record at seq of the session, whatever its kind.
func findRecord(all *sessions.Records, id sessions.SessionID, seq uint64) (sessions.KindRecord, error) {
	kinds, err := all.Kinds()
	if err != nil {
		return sessions.KindRecord{}, err
	}
	for _, kind := range kinds {
		st, ok, err := all.Record(kind, id, seq)
		if err != nil {
			return sessions.KindRecord{}, err
		}
		if ok {
			return sessions.KindRecord{Kind: kind, Stamped: st}, nil
		}
	}
	return sessions.KindRecord{}, notFound("no record %d in session %d", seq, id)
}

// newRecordPage returns the page of kr, as it stands alone.
func newRecordPage(f frame, kr sessions.KindRecord) recordPage {
	rec := &kr.Record
	p := recordPage{
		frame: f, Session: kr.Stamp.Session, Seq: kr.Stamp.Seq, Kind: render.Clean(kr.Kind), Name: cut(rec.Name),
		Offset: render.Duration(kr.Stamp.Offset), Wall: render.Duration(rec.Wall), Effect: render.Effect(rec),
		Status: render.Clean(render.Status(rec.Status)),
	}
	if rec.TraceID != (sessions.TraceID{}) {
		p.Span = "trace " + rec.TraceID.String() + " · span " + rec.SpanID.String()
		if rec.ParentSpanID != (sessions.SpanID{}) {
			p.Span += " · parent " + rec.ParentSpanID.String()
		}
	}
	m := explain.Match{}
	for _, kv := range rec.Attributes {
		a := attrRow{Key: cut(kv.Key), Value: cut(render.Value(kv.Value)), Input: rec.IsInput(kv.Key), IsKey: m.IsKey(kv.Key),
			History: history(kr.Kind, kv)}
		p.Attrs = append(p.Attrs, a)
	}
	for _, e := range rec.Events {
		p.Events = append(p.Events, eventRow{render.Duration(e.Offset), cut(e.Name), cut(render.Attrs(e.Attributes))})
	}
	return p
}

// maxLinked bounds the key and value a link carries: a value of
// megabytes makes no address.
const maxLinked = 2 << 10

// history returns the address of the why page of the records of kind
// whose attribute kv.Key has kv's value: its history across sessions; ""
// for a key and value too long to link.
func history(kind string, kv sessions.Attr) string {
	v := kv.Value.String()
	if len(kind)+len(kv.Key)+len(v) > maxLinked {
		return ""
	}
	return "/why?" + url.Values{"kind": {kind}, "key": {kv.Key}, "value": {v}}.Encode()
}

// placeInTree sets what the record did (its verdict), the records it ran
// inside (its chain of marks and parents, by parent span) and how many
// ran directly inside it, from its session's tree.
func (p *recordPage) placeInTree(all *sessions.Records, kr sessions.KindRecord) error {
	tree, err := explain.Tree(all, kr.Stamp.Session)
	if err != nil {
		return err
	}
	n := tree.BySeq(kr.Stamp.Seq)
	if n == nil {
		return nil
	}
	p.Verdict = render.Verdict(n.Verdict())
	for range tree.Children(n) {
		p.Children++
	}
	var chain []chainRow
	for a := tree.Parent(n); a != nil; a = tree.Parent(a) {
		ar, err := tree.Record(all, a)
		if err != nil {
			return err
		}
		chain = append(chain, chainRow{Seq: ar.Stamp.Seq, Kind: render.Clean(ar.Kind), Name: cut(ar.Record.Name), Wall: render.Duration(ar.Record.Wall)})
	}
	for i := range chain {
		p.Chain = append(p.Chain, chain[len(chain)-1-i])
		p.Chain[i].Depth = i
	}
	return nil
}

// sayWhy sets why the record was done, as records why KIND KEY=VALUE says
// it, by the attribute that names its work: its first key attribute (key,
// or ending in .key), else the first attribute its span started with (an
// input: what it was asked to do, such as the kernel a compile compiles).
// A record with neither says so.
func (p *recordPage) sayWhy(r *http.Request, all *sessions.Records, kr sessions.KindRecord) error {
	key := explain.Match{}.KeyOf(kr.Record.Attributes)
	if len(key) == 0 {
		for _, kv := range kr.Record.Attributes {
			if kr.Record.IsInput(kv.Key) {
				key = sessions.Attrs{kv}
				break
			}
		}
	}
	if len(key) == 0 {
		return nil
	}
	k, v := key[0].Key, key[0].Value.String()
	p.WhyKey = cut(k + "=" + v)
	p.WhyLink = history(kr.Kind, key[0])
	for reason, err := range explain.Why(all, kr.Kind, k, sessions.StringValue(v)) {
		if err != nil {
			return err
		}
		if err := r.Context().Err(); err != nil {
			return err
		}
		if reason.Stamp.Session == kr.Stamp.Session && reason.Stamp.Seq == kr.Stamp.Seq {
			p.Why = render.Clean(render.Why(reason, k, v))
			return nil
		}
	}
	return nil
}

// whyPage is the history of a key across sessions: records why's
// answer.
type whyPage struct {
	frame
	Kind, Key, Value string
	Rows             []whyRow
	Total            int // records of the key
	// Tallied is how many hits of the key sessions let go and their
	// tallies counted: a row each session's tally, after its records.
	Tallied int64
	// Lines is how many rows the whole history has: a record's or a
	// tally's each. Rows holds the first whyRows.
	Lines int
}

// whyRow is one record of the key and why it was done.
type whyRow struct {
	Session  sessions.SessionID
	Seq      uint64
	Name     string
	Wall     string
	Verdict  string
	Reason   string // the one word
	Why      string // the sentence
	Previous string // the record compared with: its page
	Tallied  bool   // a session's tally of the key: no record, no seq
}

// whyRows bounds the records the why page lists; its JSON lists them all,
// streamed, as records why --json does.
const whyRows = 500

// why is the history of a key across sessions: every record of a kind
// whose attribute has a value, oldest first, and why each was done. Its
// JSON is records why --json's objects.
func (s *Server) why(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	kind, key, value := q.Get("kind"), q.Get("key"), q.Get("value")
	if kind == "" || key == "" {
		s.fail(w, r, badRequest("why needs a kind, a key and its value: /why?kind=K&key=K&value=V"))
		return
	}
	p := whyPage{frame: s.frame(r, "why "+render.Clean(kind)+" "+cut(key+"="+value), ""), Kind: render.Clean(kind), Key: cut(key), Value: cut(value)}
	asJSON := isAPI(r)
	var lines lineWriter
	if asJSON {
		lines = newLineWriter(w)
	}
	err := s.cfg.Stores.Read(r.Context(), func(all *sessions.Records, _ []stores.Store) error {
		whys, _, err := views.WhyLines(all, kind, key, value)
		if err != nil {
			return err
		}
		for l, err := range whys {
			if err != nil {
				return err
			}
			if err := r.Context().Err(); err != nil {
				return err
			}
			p.Lines++
			if l.Tallied {
				p.Tallied += l.Entry.Count
			} else {
				p.Total++
			}
			switch {
			case asJSON && l.Tallied:
				err = lines.encode(api.NewWhyTally(l.Session, l.Entry))
			case asJSON:
				err = lines.encode(api.NewWhy(l.Reason))
			case len(p.Rows) < whyRows && l.Tallied:
				p.Rows = append(p.Rows, whyRow{Session: l.Session, Name: cut(l.Entry.Name), Wall: render.Duration(l.Entry.Wall),
					Verdict: "hit", Reason: "tallied", Why: render.TallyEntry(l.Entry), Tallied: true})
			case len(p.Rows) < whyRows:
				p.Rows = append(p.Rows, newWhyRow(l.Reason, key, value))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if asJSON {
		lines.finish(s, r, err)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.page(w, "why", p)
}

func newWhyRow(reason explain.Reason, key, value string) whyRow {
	row := whyRow{
		Session: reason.Stamp.Session, Seq: reason.Stamp.Seq, Name: cut(reason.Record.Name),
		Wall: render.Duration(reason.Record.Wall), Verdict: render.Verdict(reason.Verdict),
		Reason: string(reason.Cause), Why: cut(render.Why(reason, key, value)),
	}
	if reason.HasPrevious {
		row.Previous = "/sessions/" + reason.Previous.Session.String() + "/records/" + strconv.FormatUint(reason.Previous.Seq, 10)
	}
	return row
}
