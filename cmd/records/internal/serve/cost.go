package serve

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/cmd/records/internal/views"
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
)

// costTop is how many rows of each table the cost page lists unless asked
// (?top=, 0 for all): records cost's default.
const costTop = 20

// costPage is records cost: work against hits, per kind and key.
type costPage struct {
	frame
	Top                    int
	Children               []childRow
	Work                   []workRow
	LeftChildren, LeftWork int
}

// childRow is a row of the children table.
type childRow struct {
	Parent, Child     string
	Parents, Children int
	Wall, Unchanged   string
}

// workRow is a piece of work recorded more than once: its records, its
// hits and its misses, and why the misses were done.
type workRow struct {
	Kind, Name, Key   string
	History           string // the why page of its key
	Records, Sessions int
	Wall              string
	Redos             int
	Redone            string
	Raced, NewHere    int
	Hits              string // "390 (389 tallied)"
	Misses            int
	HitTime           string
}

// cost adds up, across every session, work that may have been wasted. Its
// JSON is records cost --json --top N's objects.
func (s *Server) cost(w http.ResponseWriter, r *http.Request) {
	top := costTop
	if v := r.URL.Query().Get("top"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, r, badRequest("top %q: want a number of rows, 0 for all", v))
			return
		}
		top = n
	}
	var (
		children []explain.ChildWork
		redone   []explain.KeyWork
	)
	p := costPage{frame: s.frame(r, "cost", "cost"), Top: top}
	var sum *tallied.Sum
	err := s.cfg.Stores.Read(r.Context(), func(all *sessions.Records, _ []stores.Store) error {
		// records cost's sum, each session's tally with it (views.Rework).
		rw, tl, err := views.Rework(r.Context(), all)
		children, redone, sum = rw.Children(), rw.Redone(), tl
		return err
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	redone = slices.DeleteFunc(redone, func(k explain.KeyWork) bool { return k.Kind == sessions.MarksKind })
	if top > 0 {
		p.LeftChildren, p.LeftWork = max(len(children)-top, 0), max(len(redone)-top, 0)
		children, redone = children[:min(top, len(children))], redone[:min(top, len(redone))]
	}
	if isAPI(r) {
		lines := newLineWriter(w)
		for _, c := range children {
			lines.encode(api.NewChildCost(c))
		}
		for _, k := range redone {
			lines.encode(api.NewRedone(k))
		}
		lines.encode(api.NewTallies(sum))
		lines.out.Flush()
		return
	}
	for _, c := range children {
		row := childRow{Parent: render.Clean(c.Parent), Child: render.Clean(c.Child), Parents: c.Parents, Children: c.Children,
			Wall: render.Duration(c.Wall), Unchanged: "unknown"}
		if c.UnchangedKnown {
			row.Unchanged = render.Duration(c.Unchanged)
		}
		p.Children = append(p.Children, row)
	}
	for _, k := range redone {
		row := workRow{Kind: render.Clean(k.Kind), Name: cut(k.Name), Key: cut(render.Attrs(k.Key)),
			Records: k.Records, Sessions: k.Sessions, Wall: render.Duration(k.Wall), Redos: k.Redos, Redone: render.Duration(k.Redone),
			Raced: k.Raced, NewHere: k.NewHere, Hits: render.Hits(k.Hits, k.Tallied), Misses: k.Misses, HitTime: render.Duration(k.HitWall)}
		if len(k.Key) > 0 {
			row.History = history(k.Kind, k.Key[0])
		}
		p.Work = append(p.Work, row)
	}
	s.page(w, "cost", p)
}
