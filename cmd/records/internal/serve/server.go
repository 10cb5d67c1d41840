// Package serve is records serve: a read-only web app over the stores
// --dir names, which answers in a browser what the command answers one
// command at a time. A person clicks from the sessions to a session (its
// timeline, critical path, summary and records), to a record (its
// attributes, the marks it ran inside, and why it was done), to the
// history of its key across sessions, and to a diff with the session
// before it; cost links each piece of work redone to its history.
//
// Every page is drawn on the server with html/template, from the same
// library calls the command makes (the session's drawing is the report's,
// package report), and has its JSON at the same path under /api/: the
// objects --json prints, line by line (package api), so that a script
// reads the numbers a page shows.
//
// Everything a store holds is untrusted, and so is every request. Values
// are escaped by html/template and cleaned as on a terminal; the pages
// run no script but the two files this package embeds, and their Content
// Security Policy says so; no request names a file (the stores are fixed
// when the server starts, its files embedded); a request whose Host is
// not the loopback address the server was bound to is refused, so that a
// web page elsewhere cannot read a loopback server through its own name
// (DNS rebinding). Reads run one at a time over stores held open
// (stores.Held), each within the memory a view takes: a page lists a
// bounded number of rows, and reads the rest only when asked.
package serve

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/cmd/records/internal/report"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
)

// The app's pages and files, built into the program: no request reaches
// the file system.
var (
	//go:embed templates/*.html
	templateFiles embed.FS
	//go:embed static
	staticFiles embed.FS
)

// pages are parsed once.
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"plural": render.Plural,
	"table":  func(title string, rows []diffRow, class string) diffTable { return diffTable{title, rows, class} },
}).ParseFS(templateFiles, "templates/*.html"))

// CSP is every response's Content Security Policy: scripts, styles and
// connections (the live view's events) from the server itself, and
// nothing else: no inline script or style, no plug-in, no frame, no form
// sent elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Timeouts of the HTTP server. A page of a big session takes seconds to
// read; a live view's events stream for as long as it is open, each
// event written within writeTimeout.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 5 * time.Minute
	idleTimeout       = 2 * time.Minute
	maxHeaderBytes    = 64 << 10
)

// Config is what a Server serves, and how.
type Config struct {
	// Stores are the stores, held open between reads.
	Stores *stores.Held
	// Names name the stores for the pages, as --dir gave them.
	Names []string
	// Log is told what a command would print on stderr.
	Log io.Writer
	// Hosts, when not empty, are the host names (without a port) a
	// request's Host may name: the loopback names of a loopback server.
	// Empty accepts any (a server bound to another address is reached by
	// whatever name its users give it).
	Hosts []string
	// Follow is how often a live view reads the store; 0 is a second.
	Follow time.Duration
}

// Server is the web app, an http.Handler.
type Server struct {
	cfg  Config
	mux  *http.ServeMux
	live chan struct{} // a token per live view streaming
}

// maxLive bounds the live views streaming at once: each reads the store
// every Follow.
const maxLive = 8

// New returns the web app over cfg's stores.
func New(cfg Config) *Server {
	if cfg.Follow <= 0 {
		cfg.Follow = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), live: make(chan struct{}, maxLive)}
	static, _ := fs.Sub(staticFiles, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /static/report.css", file("text/css; charset=utf-8", report.Style))
	s.mux.HandleFunc("GET /static/report.js", file("text/javascript; charset=utf-8", report.Script))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/sessions", http.StatusFound)
	})
	s.mux.HandleFunc("GET /sessions", s.sessions)
	s.mux.HandleFunc("GET /api/sessions", s.sessions)
	s.mux.HandleFunc("GET /sessions/{id}", s.session)
	s.mux.HandleFunc("GET /api/sessions/{id}", s.session)
	s.mux.HandleFunc("GET /api/sessions/{id}/records", s.recordsPage)
	s.mux.HandleFunc("GET /sessions/{id}/events", s.events)
	s.mux.HandleFunc("GET /sessions/{id}/records/{seq}", s.record)
	s.mux.HandleFunc("GET /api/sessions/{id}/records/{seq}", s.record)
	s.mux.HandleFunc("GET /why", s.why)
	s.mux.HandleFunc("GET /api/why", s.why)
	s.mux.HandleFunc("GET /diff", s.diff)
	s.mux.HandleFunc("GET /api/diff", s.diff)
	s.mux.HandleFunc("GET /cost", s.cost)
	s.mux.HandleFunc("GET /api/cost", s.cost)
	return s
}

// HTTPServer returns an http.Server for h with timeouts set, so that a
// client that sends slowly, or never reads, holds nothing for long;
// errors of the server itself go to log.
func HTTPServer(h http.Handler, log io.Writer) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          newLogger(log),
	}
}

// ServeHTTP sets the headers every response carries, refuses a request
// for a host the server is not, and serves it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "records serve: this server answers to its own address only", http.StatusMisdirectedRequest)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether host (a request's Host, perhaps with a
// port) names the server.
func (s *Server) hostAllowed(host string) bool {
	if len(s.cfg.Hosts) == 0 {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	for _, ok := range s.cfg.Hosts {
		if strings.EqualFold(host, ok) {
			return true
		}
	}
	return false
}

// LoopbackHosts are the names a request to a loopback server may give.
var LoopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// file serves a file held in memory.
func file(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		io.WriteString(w, body)
	}
}

// isAPI reports whether the request is for a page's JSON.
func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// frame is what every page's layout shows.
type frame struct {
	Title  string
	API    string // the page's JSON
	Stores string // the stores served
	Nav    string // the section of the navigation this page is in
}

func (s *Server) frame(r *http.Request, title, nav string) frame {
	api := "/api" + r.URL.Path
	if r.URL.RawQuery != "" {
		api += "?" + r.URL.RawQuery
	}
	return frame{Title: title, API: api, Stores: render.Clean(strings.Join(s.cfg.Names, " + ")), Nav: nav}
}

// page writes the page name with data.
func (s *Server) page(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		fmt.Fprintf(s.cfg.Log, "records: serve: page %s: %s\n", name, render.CleanMessage(err.Error()))
	}
}

// httpError is an error a handler answers with its status.
type httpError struct {
	status int
	msg    string
}

func (e httpError) Error() string { return e.msg }

// notFound and badRequest are the answers to a request naming what is
// not there, or asking in a way no page answers.
func notFound(format string, args ...any) error {
	return httpError{http.StatusNotFound, fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// fail answers with err: its status when it is an httpError, else 500
// (a store that could not be read), as a page or, for the API, as text.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var he httpError
	if errors.As(err, &he) {
		status = he.status
	} else {
		fmt.Fprintf(s.cfg.Log, "records: serve: %s: %s\n", render.CleanMessage(r.URL.Path), render.CleanMessage(err.Error()))
	}
	msg := render.CleanMessage(err.Error())
	if isAPI(r) {
		http.Error(w, msg, status)
		return
	}
	w.WriteHeader(status)
	s.page(w, "error", struct {
		frame
		Status  int
		Message string
	}{s.frame(r, http.StatusText(status), ""), status, msg})
}

// newLogger returns the log the HTTP server writes its own errors to
// (a connection cut, a handler that failed): each line cleaned as the
// command's messages are, since it may quote what a client sent.
func newLogger(w io.Writer) *log.Logger { return log.New(cleanLines{w}, "", 0) }

// cleanLines writes each message to w cleaned, on a line of its own.
type cleanLines struct{ w io.Writer }

func (c cleanLines) Write(p []byte) (int, error) {
	_, err := fmt.Fprintf(c.w, "records: serve: %s\n", render.CleanMessage(strings.TrimRight(string(p), "\n")))
	return len(p), err
}
