package render

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/sessions"
)

// Pulled writes what records pull pulled from the query service from into
// the store in dir: how much it wrote, and what it read and left, or
// judged.
func Pulled(out io.Writer, p pull.Progress, from, dir string) error {
	fmt.Fprintf(out, "pulled %s, %s, from %s into %s\n", Plural(p.Sessions, "session"), Plural(p.Records, "record"), Clean(from), Clean(dir))
	var lines []string
	if p.Tallies > 0 {
		lines = append(lines, fmt.Sprintf("(and %s of sessions' tallies: counts of what kept sessions let go)", Plural(p.Tallies, "part")))
	}
	if p.Present > 0 || p.NotRecords > 0 {
		lines = append(lines, fmt.Sprintf("(%s read were in the store already; %s read carried no record)", Plural(p.Present, "record"), Plural(p.NotRecords, "span")))
	}
	if p.Conflicts > 0 || len(p.ConflictSessions) > 0 {
		lines = append(lines, fmt.Sprintf("(conflicts: %s read that the store holds otherwise, under the same session and seq or of a session whose row says it is another, left as the store holds them: sessions %s)", Plural(p.Conflicts, "record"), sessionList(p.ConflictSessions)))
	}
	if p.Refused > 0 {
		lines = append(lines, fmt.Sprintf("(refused as implausible: %s, of a session id no recorder gives or with a negative seq)", Plural(p.Refused, "span")))
	}
	if p.Corrected > 0 {
		lines = append(lines, fmt.Sprintf("(corrected by the Collector's rules: %d of the records and session rows taken, whose times were implausible; a record keeps its span's own in records.span.start and records.span.end)", p.Corrected))
	}
	if p.TooLarge > 0 {
		lines = append(lines, fmt.Sprintf("(left out, larger than a store takes: %d of the records, session rows and spans read, which a reader would skip)", p.TooLarge))
	}
	for _, line := range lines {
		if _, err := fmt.Fprintln(out, line); err != nil {
			return err
		}
	}
	return nil
}

// sessionList names sessions, and says there may be more when there are
// as many as pull.Progress names.
func sessionList(ids []sessions.SessionID) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = id.String()
	}
	list := strings.Join(names, ", ")
	if len(ids) == 8 {
		list += " and perhaps more"
	}
	return list
}

// PullError says why a pull failed, with what to check, and how far it
// got.
func PullError(err error, p pull.Progress) error {
	var hint string
	narrow := "or pull less at a time (--since, --until, --service)"
	switch {
	case errors.Is(err, pull.ErrUnreachable):
		hint = "\nCheck the address (the query service's HTTP port, 16686 by default), and whether it expects TLS (https://) or not (http://)"
	case errors.Is(err, pull.ErrNotJaeger):
		hint = "\n--from names a Jaeger query service (v1.76 or later: its api_v3), not its OTLP port (4317, 4318) nor a Collector"
	case errors.Is(err, pull.ErrRefused):
		hint = "\nGive credentials as headers in OTEL_EXPORTER_OTLP_HEADERS"
	case errors.Is(err, pull.ErrAnswerTimeout):
		hint = "\nRaise --timeout for a query service that answers slowly, " + narrow
	case errors.Is(err, pull.ErrAnswerTooLarge):
		hint = "\nRaise --max-answer-size, " + narrow
	case errors.Is(err, pull.ErrTooManyQueries):
		hint = "\nRaise --max-queries, " + narrow
	}
	if p.Records > 0 {
		return fmt.Errorf("%w%s\n(%s of %s were written before; pull again for the rest)", err, hint, Plural(p.Records, "record"), Plural(p.Taken, "new record"))
	}
	if p.Taken > 0 {
		return fmt.Errorf("%w%s\n(nothing was written: of %s read, none is written until a pull reads everything)", err, hint, Plural(p.Taken, "new record"))
	}
	return fmt.Errorf("%w%s", err, hint)
}
