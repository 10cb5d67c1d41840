package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pullAnswer is an api_v3 answer holding spans of one trace: a record of
// a session id no recorder gives (0), and one of session id whose span
// starts at 0 (1970).
func pullAnswer(id int64) string {
	rs := func(session int64, start int64) string {
		return fmt.Sprintf(`{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}},`+
			`{"key":"records.session.id","value":{"stringValue":"%d"}}]},"scopeSpans":[{"spans":[`+
			`{"traceId":"0000000000000000000000000000000a","spanId":"000000000000000b","name":"work","startTimeUnixNano":"%d","endTimeUnixNano":"%d",`+
			`"attributes":[{"key":"records.kind","value":{"stringValue":"work"}},{"key":"records.seq","value":{"intValue":"0"}}]}]}]}`, session, start, id+1000)
	}
	return `{"result": {"resourceSpans": [` + rs(0, id) + `,` + rs(id, 0) + `]}}`
}

// records pull says what it refused, what it corrected and what
// conflicts, and leaves no staging directory behind (nor one a killed pull
// left); http:// needs no --insecure; its limits are flags, checked.
func TestPullSaysWhatItJudged(t *testing.T) {
	id := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC).UnixNano()
	var answer atomic.Pointer[string]
	first := pullAnswer(id)
	answer.Store(&first)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v3/services":
			io.WriteString(w, `{"services": ["svc"]}`)
		case "/api/v3/traces":
			io.WriteString(w, *answer.Load())
		}
	}))
	defer srv.Close()
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	// What a pull killed before it could clean up left.
	if err := os.MkdirAll(filepath.Join(parent, ".store.pull-killed", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runRecords(t, "--dir", dir, "pull", "--from", srv.URL)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"pulled 1 session, 1 record, from " + srv.URL,
		"(refused as implausible: 1 span, of a session id no recorder gives or with a negative seq)",
		"(corrected by the Collector's rules: 1 of the records and session rows taken, whose times were implausible",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pull said %q; want %q", out, want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(parent, ".store.pull-*")); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
	if out := mustRun(t, "--dir", dir, "dump", "--json"); !strings.Contains(out, `"records.span.start"`) {
		t.Errorf("the corrected record keeps no start of its own: %s", out)
	}

	// The backend's record at that seq changed since: a conflict, said.
	changed := strings.ReplaceAll(first, `"name":"work"`, `"name":"other work"`)
	answer.Store(&changed)
	code, out, errOut = runRecords(t, "--dir", dir, "pull", "--from", srv.URL)
	if want := fmt.Sprintf("(conflicts: 1 record read that the store holds otherwise, under the same session and seq or of a session whose row says it is another, left as the store holds them: sessions %d)", id); code != exitOK || !strings.Contains(out, want) {
		t.Errorf("exit %d, %q %q; want %q", code, out, errOut, want)
	}

	for _, bad := range [][]string{{"--max-queries", "0"}, {"--max-answer-size", "lots"}, {"--max-answer-size", "0"}, {"--timeout", "0s"}} {
		code, _, errOut := runRecords(t, append([]string{"--dir", dir, "pull", "--from", srv.URL}, bad...)...)
		if code != exitUsage || !strings.Contains(errOut, bad[0]) {
			t.Errorf("pull %v: exit %d, %q; want a usage error naming the flag", bad, code, errOut)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
