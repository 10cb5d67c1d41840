package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
)

// The API answers with the objects --json prints, one per line (JSON
// Lines), so that a script reads a page as it reads the command: the same
// shapes (docs/FORMAT.md §8), the same numbers.

// writeLines writes values as JSON Lines.
func writeLines[T any](w http.ResponseWriter, values []T) {
	lines := newLineWriter(w)
	for _, v := range values {
		if lines.encode(v) != nil {
			return
		}
	}
	lines.out.Flush()
}

// lineWriter streams JSON Lines as a read yields them, holding none: an
// answer as long as the command's (every record of a key) takes the
// memory of one line.
type lineWriter struct {
	w   http.ResponseWriter
	out *bufio.Writer
	enc *json.Encoder
	n   int
}

func newLineWriter(w http.ResponseWriter) lineWriter {
	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	out := bufio.NewWriter(w)
	return lineWriter{w: w, out: out, enc: api.NewEncoder(out)}
}

func (l *lineWriter) encode(v any) error {
	l.n++
	return l.enc.Encode(v)
}

// finish ends the answer: after err, a line that says it, since the
// status was sent with the first line; an error before any line is the
// answer's status.
func (l *lineWriter) finish(s *Server, r *http.Request, err error) {
	if err != nil && l.n == 0 && l.out.Buffered() == 0 {
		s.fail(l.w, r, err)
		return
	}
	if err != nil {
		fmt.Fprintf(s.cfg.Log, "records: serve: %s: %s\n", render.CleanMessage(r.URL.Path), render.CleanMessage(err.Error()))
		l.enc.Encode(struct {
			Error string `json:"error"`
		}{err.Error()})
	}
	l.out.Flush()
}
