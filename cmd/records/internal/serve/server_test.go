package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// newTestServer serves a store of one session, as a loopback server.
func newTestServer(t *testing.T) *Server {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	open := func() (sessions.Store, error) { return badgerstore.Open(dir) }
	testsupport.Write(t, open, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), recorder.Config{Label: "build"}, func(s *testsupport.Session) {
		s.Put("compile", sessions.Changed, s.Stamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), sessions.Record{Name: "compile k", Wall: time.Millisecond})
	})
	d := stores.Dirs{Dir: dir, Wait: 5 * time.Second, Command: "serve"}
	held := d.Hold(io.Discard)
	t.Cleanup(func() { held.Close() })
	return New(Config{Stores: held, Names: []string{dir}, Hosts: LoopbackHosts})
}

// answer returns the server's answer to a request.
func answer(s *Server, method, host, path string) *http.Response {
	req := httptest.NewRequest(method, path, nil)
	req.Host = host
	w := httptest.NewRecorder()
	s.ServeHTTP(w, req)
	return w.Result()
}

// TestEveryAnswerCarriesThePolicy: whatever is asked — a page, its JSON,
// a file, what is not there, a method no page takes, another host — the
// answer carries the Content Security Policy and nosniff, and nothing
// but the app's own files is served.
func TestEveryAnswerCarriesThePolicy(t *testing.T) {
	s := newTestServer(t)
	for _, c := range []struct {
		method, host, path string
		status             int
		contentType        string
	}{
		{"GET", "127.0.0.1:8080", "/sessions", 200, "text/html; charset=utf-8"},
		{"GET", "localhost:8080", "/api/sessions", 200, "application/x-ndjson; charset=utf-8"},
		{"HEAD", "[::1]:8080", "/sessions", 200, "text/html; charset=utf-8"},
		{"GET", "127.0.0.1", "/static/serve.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "127.0.0.1", "/static/report.css", 200, "text/css; charset=utf-8"},
		{"GET", "127.0.0.1", "/static/../server.go", 307, ""}, // to /server.go, which is not there
		{"GET", "127.0.0.1", "/static/..%2fserver.go", 404, ""},
		{"GET", "127.0.0.1", "/static/templates/layout.html", 404, ""},
		{"GET", "127.0.0.1", "/nothing", 404, ""},
		{"GET", "127.0.0.1", "/sessions/not-an-id", 404, ""},
		{"GET", "127.0.0.1", "/sessions/12", 404, ""},
		{"POST", "127.0.0.1", "/sessions", 405, ""},
		{"DELETE", "127.0.0.1", "/api/sessions", 405, ""},
		{"GET", "evil.example:8080", "/sessions", 421, ""},
		{"GET", "127.0.0.1.evil.example", "/api/sessions", 421, ""},
	} {
		resp := answer(s, c.method, c.host, c.path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s (Host %s): %d, want %d\n%.300s", c.method, c.path, c.host, resp.StatusCode, c.status, body)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != CSP {
			t.Errorf("%s %s: Content-Security-Policy %q", c.method, c.path, got)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: no nosniff", c.method, c.path)
		}
		if c.contentType != "" && resp.Header.Get("Content-Type") != c.contentType {
			t.Errorf("%s %s: Content-Type %q, want %q", c.method, c.path, resp.Header.Get("Content-Type"), c.contentType)
		}
		if strings.Contains(string(body), "package serve") {
			t.Errorf("%s %s served a source file", c.method, c.path)
		}
	}
	if strings.Contains(CSP, "unsafe") {
		t.Errorf("the policy allows something unsafe: %s", CSP)
	}
}

// TestHTTPServerHasTimeouts: a client that sends its headers slowly, or
// never reads, holds the server for a bounded time.
func TestHTTPServerHasTimeouts(t *testing.T) {
	srv := HTTPServer(http.NotFoundHandler(), io.Discard)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("timeouts: header %v, read %v, write %v, idle %v, max header bytes %d",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
}
