package render

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// Log is the slog handler the command installs: what the library
// and Badger log (a spool file set aside, a warning from Badger) is
// printed on standard error as "records: warning: <message> key=value",
// every part cleaned by CleanMessage. Without it, slog's default handler
// would print a file name from the store's directory as it is, escapes and
// all.
type Log struct {
	mu    *sync.Mutex // one line at a time: Badger logs from its goroutines
	w     io.Writer
	attrs string // " key=value" for the attributes given to WithAttrs
	group string // "g." for the groups given to WithGroup
}

// NewLog returns the handler, printing on w.
func NewLog(w io.Writer) *Log { return &Log{mu: new(sync.Mutex), w: w} }

// Enabled reports whether level is printed: information and above, as
// slog's default handler prints.
func (h *Log) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelInfo }

// Handle prints one record on one line.
func (h *Log) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("records: ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	}
	b.WriteString(CleanMessage(r.Message))
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(h.attr(a))
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// attr formats an attribute as " key=value", cleaned.
func (h *Log) attr(a slog.Attr) string {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return ""
	}
	if a.Value.Kind() == slog.KindGroup {
		g := &Log{group: h.group + a.Key + "."}
		if a.Key == "" {
			g.group = h.group
		}
		var b strings.Builder
		for _, x := range a.Value.Group() {
			b.WriteString(g.attr(x))
		}
		return b.String()
	}
	return " " + String(h.group+a.Key) + "=" + String(a.Value.String())
}

// WithAttrs returns a handler that prints attrs on every line.
func (h *Log) WithAttrs(attrs []slog.Attr) slog.Handler {
	g := *h
	for _, a := range attrs {
		g.attrs += h.attr(a)
	}
	return &g
}

// WithGroup returns a handler that qualifies the keys that follow with
// name.
func (h *Log) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	g := *h
	g.group += name + "."
	return &g
}
