package render

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

// MaxIndent is how many levels a tree drawn as text indents at most: a
// session nested thousands deep stays readable at any width, and the
// records deeper than this show their depth as a number.
const MaxIndent = 32

// PathNamed is how many records of a session's critical path the text of
// records summary shows at most: those that bounded it most, in path
// order (summary.Options.Named). JSON lists them all.
const PathNamed = 20

// Summaries writes the sessions summed up as records summary prints them:
// a row each, then each one's critical path.
func Summaries(w io.Writer, sums []*summary.Session) error {
	t := NewTable(w)
	if err := t.Row("ID", "STARTED", "LABEL", "PID", "DURATION", "RECORDS", "HITS", "SLOWEST"); err != nil {
		return err
	}
	for _, s := range sums {
		if err := t.Row(
			s.ID.String(),
			Time(time.UnixMilli(s.StartedUnixMs)),
			OrDash(s.Label),
			PID(s.Process),
			Duration(s.Summary.End),
			OrDash(totals(s.Summary)),
			hitRates(s),
			OrDash(slowest(s.Slowest)),
		); err != nil {
			return err
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(sums, func(s *summary.Session) bool { return !s.Tallied }) {
		fmt.Fprintln(w, "HITS: kind=hits/lookups(share), kept hits and tallied ones (let go, counted, not kept); \"no tally\": kept by a writer that did not count what it let go, hits of kept records only.")
	}
	for _, s := range sums {
		if err := path(w, s); err != nil {
			return err
		}
	}
	return nil
}

// hitRates says how often a session's kinds hit: "cache=12/13(92%)",
// with ", no tally" when it has no tally.
func hitRates(s *summary.Session) string {
	parts := make([]string, 0, len(s.Hits))
	for _, k := range s.Hits {
		parts = append(parts, fmt.Sprintf("%s=%d/%d(%.0f%%)", Clean(k.Kind), k.Hits, k.Lookups(), 100*k.Share()))
	}
	out := strings.Join(parts, " ")
	switch {
	case !s.Tallied && out == "":
		return "no tally"
	case !s.Tallied:
		return out + ", no tally"
	}
	return OrDash(out)
}

// path writes the critical path of a session: the records that bounded
// its duration, each with the time it alone held the session up.
func path(w io.Writer, s *summary.Session) error {
	if len(s.Path) == 0 {
		return nil
	}
	if s.Requests > 1 {
		var held time.Duration
		for _, st := range s.Path {
			held += st.Critical
		}
		if _, err := fmt.Fprintf(w, "\ncritical path of session %s, in its longest of %d requests (from seq %d): %s, bounded by %s\n",
			s.ID, s.Requests, s.Path[0].Seq, Duration(held), Plural(len(s.Path), "record")); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintf(w, "\ncritical path of session %s: %s, bounded by %s\n",
		s.ID, Duration(s.Summary.End), Plural(len(s.Path), "record")); err != nil {
		return err
	}
	t := NewTable(w)
	if err := t.Row("  OFFSET", "WALL", "HELD UP", "KIND", "RECORD"); err != nil {
		return err
	}
	for _, st := range s.Named {
		indent := strings.Repeat("  ", min(st.Depth, MaxIndent))
		if err := t.Row("  "+Duration(st.Offset), Duration(st.Wall), Duration(st.Critical),
			st.Kind, indent+OrDash(st.Name)); err != nil {
			return err
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if left := len(s.Path) - len(s.Named); left > 0 {
		_, err := fmt.Fprintf(w, "  and %s that held it up less (summary --json lists the whole path)\n", Plural(left, "record"))
		return err
	}
	return nil
}

// totals formats each kind's count and time as "kind=count/time", in
// kind order, the time counted once (records of the kind inside or beside
// one another add only what the others did not cover), and the share of
// the session it is: compile=4/50ms(56%).
func totals(s explain.Summary) string {
	var b strings.Builder
	for i, k := range s.Kinds {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(String(k.Kind))
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(k.Records))
		b.WriteByte('/')
		b.WriteString(Duration(k.Wall))
		if s.End > 0 {
			b.WriteString("(" + strconv.Itoa(int(math.Round(100*float64(k.Wall)/float64(s.End)))) + "%)")
		}
	}
	return b.String()
}

// slowest formats records as "name=wall", slowest first.
func slowest(slowest []sessions.KindRecord) string {
	var b strings.Builder
	for i, kr := range slowest {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(String(kr.Record.Name))
		b.WriteByte('=')
		b.WriteString(Duration(kr.Record.Wall))
	}
	return b.String()
}

// Sessions writes session rows, with their records counted per kind, as
// records sessions prints them.
func Sessions(w io.Writer, rows []sessions.Session, counts map[sessions.SessionID]map[string]int) error {
	t := NewTable(w)
	if err := t.Row("ID", "STARTED", "LABEL", "PID", "OS", "ARCH", "VERSION", "RECORDS"); err != nil {
		return err
	}
	for _, s := range rows {
		if err := t.Row(
			s.ID.String(),
			Time(time.UnixMilli(s.StartedUnixMs)),
			OrDash(s.Label),
			strconv.Itoa(s.Process),
			OrDash(s.OS),
			OrDash(s.Arch),
			OrDash(explain.ServiceVersion(s)),
			OrDash(Counts(counts[s.ID])),
		); err != nil {
			return err
		}
	}
	return t.Flush()
}

// Pruned writes the sessions a prune deletes, with their records counted
// per kind, as records prune prints them.
func Pruned(w io.Writer, gone []sessions.Session, counts map[sessions.SessionID]map[string]int) error {
	t := NewTable(w)
	if err := t.Row("ID", "STARTED", "LABEL", "RECORDS"); err != nil {
		return err
	}
	for _, s := range gone {
		if err := t.Row(s.ID.String(), Time(time.UnixMilli(s.StartedUnixMs)), OrDash(s.Label), OrDash(Counts(counts[s.ID]))); err != nil {
			return err
		}
	}
	return t.Flush()
}
