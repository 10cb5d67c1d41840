package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/otelrecords/otelrecords/cmd/records/internal/serve"
)

var servePNG = flag.String("serve-png", "", "also save the serve test's session screenshot to this `file` (e.g. ../../docs/serve.png)")

// startServe starts records serve on the stores dirs, as a process of its
// own, and returns its address (http://127.0.0.1:PORT) once it says it.
// The test's end interrupts it, and checks it ended with status 0.
func startServe(t *testing.T, dirs ...string) string {
	t.Helper()
	args := []string{"serve"}
	for _, d := range dirs {
		args = append(args, "--dir", d)
	}
	cmd := recordsProcess(t, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(lockedBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		if err := cmd.Wait(); err != nil {
			t.Errorf("records serve ended with %v after an interrupt; want status 0\n%s", err, stderr)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("records serve said nothing: %v\n%s", err, stderr)
	}
	go io.Copy(io.Discard, out)
	m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("records serve printed %q, want its address", line)
	}
	return m[1]
}

// get returns the body of the server's answer to path, failing unless it
// is 200 and carries the Content Security Policy.
func get(t *testing.T, base, path string) string {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	if got := resp.Header.Get("Content-Security-Policy"); got != serve.CSP {
		t.Errorf("GET %s: Content-Security-Policy %q, want %q", path, got, serve.CSP)
	}
	return string(b)
}

// openBrowser opens Chromium on the page at url, and returns its context;
// finish checks that it logged no console error and opened no dialog.
func openBrowser(t *testing.T, url string) (context.Context, func()) {
	t.Helper()
	exe := chromium(t)
	return openInChromiumURL(t, exe, url, "main, #session")
}

// shot saves a screenshot of the page, named name, in the test's
// temporary directory, and where also says when it is not "".
func shot(t *testing.T, bctx context.Context, name, also string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("SERVE_SHOTS") // to look at them after the test
	if dir == "" {
		dir = t.TempDir()
	}
	for _, path := range []string{filepath.Join(dir, name+".png"), also} {
		if path == "" {
			continue
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
}

// evalJS evaluates a script in the page and returns its value.
func evalJS[T any](t *testing.T, bctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(bctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// clickTo clicks the first element sel finds and waits for the page it
// opens to show want.
func clickTo(t *testing.T, bctx context.Context, sel, want string) {
	t.Helper()
	if err := chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(sel)),
		chromedp.WaitVisible(chromedp.CSS(want)),
	); err != nil {
		t.Fatalf("click %s, then wait for %s: %v", sel, want, err)
	}
}

// TestServeClickThrough drives records serve in Chromium over two stores
// read as one: one the example program wrote (three runs of a build), and
// one an otelhttp server recorded in process wrote. It clicks from the
// sessions to a session, to a record, to the history of its key, to a
// diff with the session before it, and checks that each page shows the
// numbers the command prints with --json for the same question, and that
// each page's JSON is what --json prints.
func TestServeClickThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example, and drives Chromium")
	}
	chromium(t)
	example, _ := writeExampleStore(t, nil)
	server := filepath.Join(t.TempDir(), "server")
	serverRun(t, server, "server", 2*time.Millisecond, 200, 10)
	base := startServe(t, example, server)

	// The sessions page lists every session of both stores, newest first,
	// each with its store and its records as records sessions counts them.
	var want []map[string]any
	for _, dir := range []string{example, server} {
		for _, s := range decodeLines(t, mustRun(t, "sessions", "--dir", dir, "--json")) {
			s["store"] = dir
			want = append(want, s)
		}
	}
	slices.SortFunc(want, func(a, b map[string]any) int { return strings.Compare(fmt.Sprint(b["id"]), fmt.Sprint(a["id"])) })
	got := decodeLines(t, get(t, base, "/api/sessions"))
	if len(got) != len(want) {
		t.Fatalf("/api/sessions lists %d sessions, records sessions %d", len(got), len(want))
	}
	for i := range want {
		for _, k := range []string{"id", "label", "records", "resource", "started_unix_ms", "store"} {
			if g, w := jsonOf(got[i][k]), jsonOf(want[i][k]); g != w {
				t.Errorf("session %d: %s is %s, records sessions --json says %s", i, k, g, w)
			}
		}
	}

	bctx, finish := openBrowser(t, base+"/sessions")
	defer finish()
	rows := evalJS[[]string](t, bctx, `[...document.querySelectorAll('table.sessions tbody tr')].map(r => r.cells[6].textContent + ' ' + r.cells[3].textContent + ' ' + r.cells[5].textContent)`)
	if len(rows) != len(want) {
		t.Fatalf("the sessions page lists %d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		total := 0.0
		for _, n := range w["records"].(map[string]any) {
			total += jnum(n)
		}
		if line := fmt.Sprintf("%s %d %s", w["id"], int(total), w["store"]); rows[i] != line {
			t.Errorf("sessions page row %d: %q, want %q (id, records, store)", i, rows[i], line)
		}
	}
	shot(t, bctx, "1-sessions", "")

	// The newest run of the example: its session page draws its timeline,
	// and its summary counts what records summary --json counts.
	newest := exampleNewest(t, example)
	clickTo(t, bctx, `a[href="/sessions/`+newest+`"]`, "#timeline")
	sum := decodeLines(t, mustRun(t, "summary", "--dir", example, "--session", newest, "--json"))[0]
	if got := get(t, base, "/api/sessions/"+newest); got != mustRun(t, "summary", "--dir", example, "--session", newest, "--json") {
		t.Errorf("/api/sessions/%s:\n%s\nrecords summary --json:\n%s", newest, got, jsonOf(sum))
	}
	counts := evalJS[map[string]float64](t, bctx, `Object.fromEntries([...document.querySelectorAll('table.summary tbody tr')].map(r => [r.cells[0].textContent.trim(), +r.cells[1].textContent]))`)
	for kind, v := range sum["records"].(map[string]any) {
		if n := jnum(v.(map[string]any)["count"]); counts[kind] != n {
			t.Errorf("the session page counts %v records of %s, records summary --json %v", counts[kind], kind, n)
		}
	}
	bars := evalJS[int](t, bctx, `document.querySelectorAll('#timeline g.bar').length`)
	if total := int(sumCounts(sum)); bars != total {
		t.Errorf("the timeline draws %d bars, want one per record, %d", bars, total)
	}
	shot(t, bctx, "2-session", *servePNG)

	// A compile of the newest run, by clicking its bar: its attributes are
	// dump --json's, and it says why it was done as records why does.
	seq := evalJS[string](t, bctx, `(() => { const b = [...document.querySelectorAll('#timeline g.bar')].find(b => (b.getAttribute('aria-label') || '').includes('· compile ·') || (b.getAttribute('aria-label') || '').includes('compile ·')); return b ? b.dataset.seq : ''; })()`)
	if seq == "" {
		t.Fatal("no compile bar on the timeline")
	}
	clickTo(t, bctx, `#timeline g.bar[data-seq="`+seq+`"] rect`, "#why")
	dump := mustRun(t, "dump", "--dir", example, "--session", newest, "--json")
	var rec map[string]any
	for _, r := range decodeLines(t, dump) {
		if fmt.Sprint(r["seq"]) == seq {
			rec = r
		}
	}
	if rec == nil {
		t.Fatalf("records dump has no seq %s", seq)
	}
	if got := decodeLines(t, get(t, base, "/api/sessions/"+newest+"/records/"+seq)); jsonOf(got[0]) != jsonOf(rec) {
		t.Errorf("/api/sessions/%s/records/%s:\n%s\nrecords dump --json:\n%s", newest, seq, jsonOf(got[0]), jsonOf(rec))
	}
	attrs := evalJS[map[string]string](t, bctx, `Object.fromEntries([...document.querySelectorAll('table.attrs tbody tr')].map(r => [r.cells[0].textContent, r.cells[1].textContent]))`)
	for k, v := range rec["attributes"].(map[string]any) {
		if attrs[k] != fmt.Sprint(v) {
			t.Errorf("the record page shows %s = %q, dump --json %v", k, attrs[k], v)
		}
	}
	why := evalJS[string](t, bctx, `document.querySelector('#why p.why').textContent`)
	historyURL := evalJS[string](t, bctx, `document.getElementById('history').getAttribute('href')`)
	shot(t, bctx, "3-record", "")
	hu, err := url.Parse(historyURL)
	if err != nil || hu.Query().Get("key") == "" {
		t.Fatalf("the record's history link %q names no key", historyURL)
	}
	kv := hu.Query().Get("key") + "=" + hu.Query().Get("value")
	whyJSON := mustRun(t, "why", "--dir", example, "compile", kv, "--json")
	var reason string
	for _, r := range decodeLines(t, whyJSON) {
		if fmt.Sprint(r["session"]) == newest && fmt.Sprint(r["seq"]) == seq {
			reason = fmt.Sprint(r["reason"])
		}
	}
	if reason == "" || !strings.HasPrefix(why, reason) {
		t.Errorf("the record page says why %q; records why --json says %q", why, reason)
	}

	// The history of its key: every record of it across the three runs,
	// each with the reason records why gives.
	clickTo(t, bctx, "#history", "table.why")
	reasons := evalJS[[]string](t, bctx, `[...document.querySelectorAll('table.why tbody tr')].map(r => r.cells[0].textContent + ' ' + r.cells[1].textContent + ' ' + r.cells[5].textContent)`)
	var wantReasons []string
	for _, r := range decodeLines(t, whyJSON) {
		wantReasons = append(wantReasons, fmt.Sprintf("%v %v %v", r["session"], r["seq"], r["reason"]))
	}
	if !slices.Equal(reasons, wantReasons) {
		t.Errorf("the why page lists %q, records why --json %q", reasons, wantReasons)
	}
	if got := get(t, base, "/api"+strings.TrimPrefix(evalJS[string](t, bctx, `location.pathname + location.search`), "")); got != whyJSON {
		t.Errorf("the why page's JSON:\n%s\nrecords why --json:\n%s", got, whyJSON)
	}
	shot(t, bctx, "4-why", "")

	// Back to the session, and its diff with the run before it: the keys
	// records diff --json lists, and --fail-slower's verdict.
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/sessions/"+newest), chromedp.WaitVisible(chromedp.CSS("#timeline"))); err != nil {
		t.Fatal(err)
	}
	clickTo(t, bctx, `.crumbs a[href^="/diff"]`, "#verdict")
	ids := evalJS[[]string](t, bctx, `[...document.querySelectorAll('dl.sides dd > a')].map(a => a.textContent)`)
	if len(ids) != 2 || ids[1] != newest {
		t.Fatalf("the diff compares %q, want the run before %s and it", ids, newest)
	}
	diffArgs := []string{"diff", "--dir", example, "--session", ids[0], "--against-session", ids[1], "--json"}
	diffJSON := mustRun(t, diffArgs...)
	var gotDiff strings.Builder
	for _, line := range strings.SplitAfter(get(t, base, "/api/diff?a="+newest+"&fail_slower=10"), "\n") {
		if !strings.Contains(line, `"fail_slower_pct"`) {
			gotDiff.WriteString(line)
		}
	}
	if gotDiff.String() != diffJSON {
		t.Errorf("the diff's JSON:\n%s\nrecords diff --json:\n%s", gotDiff.String(), diffJSON)
	}
	keysShown := evalJS[int](t, bctx, `document.querySelectorAll('table.diff tbody tr').length`)
	if n := strings.Count(diffJSON, `"change":`); keysShown != n {
		t.Errorf("the diff page lists %d keys, records diff --json %d", keysShown, n)
	}
	verdict := evalJS[string](t, bctx, `document.getElementById('verdict').textContent`)
	code := runCode(t, append(diffArgs[:len(diffArgs)-1], "--fail-slower", "10")...)
	if passes := strings.Contains(verdict, "passes"); passes != (code == 0) {
		t.Errorf("the diff page's verdict %q, but records diff --fail-slower 10 exits %d", verdict, code)
	}
	shot(t, bctx, "5-diff", "")

	// Cost: its JSON is records cost --json's, its keys link to their
	// history.
	if got, w := get(t, base, "/api/cost"), mustRun(t, "cost", "--dir", example, "--dir", server, "--json"); got != w {
		t.Errorf("/api/cost:\n%s\nrecords cost --json:\n%s", got, w)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/cost"), chromedp.WaitVisible(chromedp.CSS("table.work"))); err != nil {
		t.Fatal(err)
	}
	if n := evalJS[int](t, bctx, `document.querySelectorAll('table.work a[href^="/why?"]').length`); n == 0 {
		t.Error("the cost page links no key to its history")
	}
	shot(t, bctx, "6-cost", "")
}

// exampleNewest returns the id of the example store's newest session.
func exampleNewest(t *testing.T, dir string) string {
	t.Helper()
	ids := serverSessions(t, dir)
	return ids[len(ids)-1]
}

// sumCounts adds up a summary's records of every kind.
func sumCounts(sum map[string]any) float64 {
	total := 0.0
	for _, v := range sum["records"].(map[string]any) {
		total += jnum(v.(map[string]any)["count"])
	}
	return total
}

// jnum is a number decoded from JSON, as a float64.
func jnum(v any) float64 {
	switch n := v.(type) {
	case json.Number:
		f, _ := n.Float64()
		return f
	case float64:
		return n
	}
	return -1
}

// jsonOf is v as JSON, to compare values decoded from two answers.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// runCode runs the command and returns its exit code.
func runCode(t *testing.T, args ...string) int {
	t.Helper()
	return run(args, io.Discard, io.Discard)
}
