package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	stdhtml "html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/otelrecords/otelrecords/cmd/records/internal/report"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/sessions"
)

var reportPNG = flag.String("report-png", "", "also save the report test's screenshot to this `file` (e.g. ../../docs/report.png)")

// TestReportEscapes checks the page as bytes: every record field is
// escaped, nothing is fetched, and the policy names the inline style and
// script by their hashes.
func TestReportEscapes(t *testing.T) {
	dir := writeGoldenStore(t)
	html := mustRun(t, "report", "--dir", dir, "--session", goldenID1.String())

	if strings.Contains(html, "<img") {
		t.Error("the page holds a raw <img: a record field went in unescaped")
	}
	if !strings.Contains(html, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the markup in a record's name is not in the page as escaped text")
	}
	for _, bad := range []string{"\u202e", "\x1b", "\a"} {
		if strings.Contains(html, bad) {
			t.Errorf("the page holds %q, which clean strips", bad)
		}
	}
	// Nothing to fetch: no src attribute, and no link but the empty icon.
	if m := regexp.MustCompile(`(?i)\ssrc=["']|<link [^>]*href="[^d#]`).FindString(html); m != "" {
		t.Errorf("the page refers to something outside it: %q", m)
	}
	for _, want := range []string{report.CSPHash(report.Style), report.CSPHash(report.Script), "default-src 'none'"} {
		if !strings.Contains(stdhtml.UnescapeString(html), want) { // a hash may hold a +, which the page escapes
			t.Errorf("the page's policy lacks %q", want)
		}
	}
	if !strings.Contains(html, "<style>"+report.Style+"</style>") || !strings.Contains(html, "<script>"+report.Script+"</script>") {
		t.Error("the inline style or script differs from the one its hash names")
	}
}

func TestReportSessions(t *testing.T) {
	dir := writeGoldenStore(t)
	// Without --session: the newest.
	if html := mustRun(t, "report", "--dir", dir); !strings.Contains(html, "<dd>"+goldenID2.String()+"</dd>") {
		t.Error("report without --session does not show the newest session")
	}
	code, _, errOut := runCLI(t, "report", "--dir", dir, "--session", "42")
	if code != 1 || !strings.Contains(errOut, "no session 42") {
		t.Errorf("report --session 42: exit %d, stderr %q; want exit 1 and no session 42", code, errOut)
	}

	// -o writes the file, readable by its owner only, and nothing else.
	out := filepath.Join(t.TempDir(), "report.html")
	if got := mustRun(t, "report", "--dir", dir, "-o", out); got != "" {
		t.Errorf("report -o printed %q", got)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("report file mode %v, want 0600", fi.Mode().Perm())
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.tmp")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

// chromium returns the path of a Chromium (or Chrome) to drive, or skips
// the test.
func chromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on this machine: .ci/setup-debian installs Debian's chromium, which this test drives")
	return ""
}

// pageFacts is what the test reads off the rendered report.
type pageFacts struct {
	Bars        int     `json:"bars"`        // g.bar elements in the timeline
	Drawn       int     `json:"drawn"`       // bars whose rectangle has an area
	Titles      int     `json:"titles"`      // <title>s the script did not take
	Images      int     `json:"images"`      // <img> elements: there must be none
	ShowsMarkup bool    `json:"showsMarkup"` // the markup shows as text
	ParentY     float64 `json:"parentY"`     // "load weights" (seq 0)
	ChildY      float64 `json:"childY"`      // "compile matmul" (seq 1), inside it
	ChildInside bool    `json:"childInside"` // horizontally within its parent
	Rows        int     `json:"rows"`        // rows of the kinds' tables
	TuneX       float64 `json:"tuneX"`       // the centre of "tune matmul" (seq 4)
	TuneY       float64 `json:"tuneY"`
	Critical    []int   `json:"critical"`   // the seqs of the bars drawn as on the critical path
	CritStroke  string  `json:"critStroke"` // how wide their outline is drawn
	PathRows    int     `json:"pathRows"`   // rows of the critical path's table
}

const factsJS = `(() => {
  const bars = [...document.querySelectorAll('#timeline g.bar')];
  const box = seq => document.querySelector('#timeline g.bar[data-seq="' + seq + '"] rect').getBBox();
  const p = box(0), c = box(1);
  const tune = document.querySelector('#timeline g.bar[data-seq="4"] rect').getBoundingClientRect();
  return {
    bars: bars.length,
    drawn: bars.filter(b => { const r = b.querySelector('rect').getBBox(); return r.width > 0 && r.height > 0; }).length,
    titles: document.querySelectorAll('#timeline title').length,
    images: document.querySelectorAll('img').length,
    showsMarkup: document.body.innerText.includes('compile <img src=x onerror=alert(1)>'),
    parentY: p.y, childY: c.y,
    childInside: c.x >= p.x && c.x + c.width <= p.x + p.width + 0.01,
    rows: document.querySelectorAll('section.kind tbody tr').length,
    tuneX: tune.left + tune.width / 2, tuneY: tune.top + tune.height / 2,
    critical: [...document.querySelectorAll('#timeline g.bar.crit')].map(b => +b.dataset.seq),
    critStroke: (() => { const b = document.querySelector('#timeline g.bar.crit rect'); return b ? getComputedStyle(b).strokeWidth : ''; })(),
    pathRows: document.querySelectorAll('table.critical tbody tr').length,
  };
})()`

// TestReportInChromium opens the report in a real headless Chromium: it
// draws one bar per record, nested as the records nest, without a console
// error or a dialog (the markup in a record runs nothing), and shows a
// record's details on hover. The screenshot is saved in the test's
// temporary directory (and where -report-png says).
func TestReportInChromium(t *testing.T) {
	exe := chromium(t)
	dir := writeGoldenStore(t)
	out := filepath.Join(t.TempDir(), "report.html")
	mustRun(t, "report", "--dir", dir, "--session", goldenID1.String(), "-o", out)

	bctx, finish := openInChromium(t, exe, out)
	defer finish()
	facts, err := chromedp.Run(bctx, chromedp.Evaluate[pageFacts](factsJS))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	const records = 10 // session 1 of the golden store
	if facts.Bars != records || facts.Drawn != records {
		t.Errorf("the timeline has %d bars, %d of them drawn; want one per record, %d", facts.Bars, facts.Drawn, records)
	}
	if facts.Titles != 0 {
		t.Errorf("%d bars kept their <title>: the page's script did not run", facts.Titles)
	}
	if facts.Images != 0 || !facts.ShowsMarkup {
		t.Errorf("markup in a record: %d <img> elements, shown as text: %v", facts.Images, facts.ShowsMarkup)
	}
	if !(facts.ChildY > facts.ParentY) || !facts.ChildInside {
		t.Errorf("compile matmul (y %v) is not drawn inside load weights (y %v)", facts.ChildY, facts.ParentY)
	}
	// The critical path of session 1, a build (its phases are internal
	// spans, one program, whatever their traces): load weights and the
	// compile inside it, then the compile that ended last (summary.json
	// says the same).
	if want := []int{0, 1, 7}; !slices.Equal(facts.Critical, want) || facts.PathRows != len(want) {
		t.Errorf("critical path: bars %v and %d table rows; want %v", facts.Critical, facts.PathRows, want)
	}
	if facts.CritStroke != "2px" {
		t.Errorf("a bar on the critical path is outlined %q wide, want 2px", facts.CritStroke)
	}
	if facts.Rows != records {
		t.Errorf("the kinds' tables have %d rows, want %d", facts.Rows, records)
	}

	// Hover over "tune matmul": its details show.
	if err := chromedp.Do(bctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, facts.TuneX, facts.TuneY)); err != nil {
		t.Fatal(err)
	}
	tip, err := chromedp.Run(bctx, chromedp.Evaluate[string](
		`(() => { const t = document.getElementById('tip'); return t.hidden ? '' : t.textContent; })()`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tune matmul", "autotune · seq 4", "status: error: simd failed", "winner = tiled"} {
		if !strings.Contains(tip, want) {
			t.Errorf("hover details %q lack %q", tip, want)
		}
	}

	screenshot(t, bctx, *reportPNG)
}

// openInChromium opens the page file in a headless Chromium (exe), 1280
// by 900, and waits for its timeline. finish checks, once the test is
// done with the page, that it logged no console error, opened no dialog
// (the markup in a record runs nothing) and took no longer than 45s, and
// closes Chromium.
func openInChromium(t *testing.T, exe, file string) (bctx context.Context, finish func()) {
	t.Helper()
	return openInChromiumURL(t, exe, "file://"+file, "#timeline")
}

// openInChromiumURL opens url in a headless Chromium (exe), 1280 by 900,
// and waits for the element sel finds; finish is openInChromium's.
func openInChromiumURL(t *testing.T, exe, url, sel string) (bctx context.Context, finish func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), // containers have a small /dev/shm
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)

	// Subscribe before navigating, so no message of the page's load is
	// missed; dialogs are recorded, and closed so the page goes on.
	var (
		mu       sync.Mutex
		messages []string
		dialogs  []string
	)
	console := chromedp.Console(bctx)
	opening := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			mu.Lock()
			if m.Type == chromedp.ConsoleError || m.IsException() {
				messages = append(messages, m.String())
			}
			mu.Unlock()
		}
	}()
	go func() {
		for ev, err := range opening {
			if err != nil {
				return
			}
			mu.Lock()
			dialogs = append(dialogs, ev.Message)
			mu.Unlock()
			chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()

	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(sel)),
	); err != nil {
		t.Fatalf("open %s in Chromium: %v", url, err)
	}
	return bctx, func() {
		defer cancel()
		defer cancelAlloc()
		defer cancelBrowser()
		// Messages travel on the same connection as the replies above; give
		// the goroutine reading them a moment to catch up.
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if len(messages) > 0 {
			t.Errorf("console errors:\n%s", strings.Join(messages, "\n"))
		}
		if len(dialogs) > 0 {
			t.Errorf("the page opened dialogs: %q", dialogs)
		}
		if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
			t.Error("Chromium took too long")
		}
	}
}

// screenshot saves a screenshot of the page in the test's temporary
// directory, and in also when it is not "", and logs where.
func screenshot(t *testing.T, bctx context.Context, also string) {
	t.Helper()
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(t.TempDir(), "report.png"), also} {
		if path == "" {
			continue
		}
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
}

// TestReportLargeSession draws at most summary.DefaultMaxBars bars, the longest
// records, and says how many it left out.
func TestReportLargeSession(t *testing.T) {
	const n = summary.DefaultMaxBars + 2500
	dir := writeManyRecords(t, n) // walls cycle through 0..49µs
	html := mustRun(t, "report", "--dir", dir)
	if bars := strings.Count(html, `<g class="bar `); bars != summary.DefaultMaxBars {
		t.Errorf("%d bars, want %d", bars, summary.DefaultMaxBars)
	}
	if want := "The 2500 shortest records (of "; !strings.Contains(html, want) {
		t.Errorf("the page does not say what it left out (%q)", want)
	}
	if rows := strings.Count(html, "<tr><td class=\"n\">"); rows != summary.DefaultMaxRows {
		t.Errorf("%d table rows, want %d", rows, summary.DefaultMaxRows)
	}
	if !strings.Contains(html, "The first 500 of 22500 records") {
		t.Error("the table does not say it lists only the first records")
	}
}

// TestReportNamesOnOneLine: a kind's table of many attribute columns (a
// server's request marks, as otelhttp sets them) keeps each short name
// on one line, and scrolls instead (issue 33: GET /lookup was broken over
// three lines). Its summary table says how many records of each kind
// changed, missed and hit.
func TestReportNamesOnOneLine(t *testing.T) {
	exe := chromium(t)
	dir := filepath.Join(t.TempDir(), "server")
	var steps []step
	for i := range 3 {
		attrs := sessions.Attrs{}
		for _, k := range []string{"http.request.method", "url.scheme", "server.address", "server.port", "network.peer.address",
			"network.peer.port", "user_agent.original", "client.address", "network.protocol.version", "url.path", "url.query",
			"http.response.status_code", "http.response.body.size", "http.route"} {
			attrs = append(attrs, str(k, k+" of request "+fmt.Sprint(i)))
		}
		steps = append(steps, step{time.Duration(i) * time.Millisecond, sessions.MarksKind, sessions.Observed,
			sessions.Record{Name: "GET /lookup", Wall: time.Millisecond, Attributes: attrs, Inputs: []string{}}})
	}
	steps = append(steps, step{5 * time.Millisecond, "compile", sessions.Changed, sessions.Record{Name: "compile k1", Wall: time.Millisecond}})
	recordSteps(t, dir, goldenStart1, "server", nil, steps)
	out := filepath.Join(t.TempDir(), "report.html")
	mustRun(t, "report", "--dir", dir, "-o", out)
	html, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// compile: 1 changed; marks: 3 hits.
	for _, want := range []string{`compile</a></td><td class="n">1</td><td class="n">1</td><td class="n">0</td><td class="n">0</td>`,
		`marks</a></td><td class="n">3</td><td class="n">0</td><td class="n">0</td><td class="n">3</td>`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the summary table lacks %s", want)
		}
	}

	bctx, finish := openInChromium(t, exe, out)
	defer finish()
	lines, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](`[...document.querySelectorAll('section.kind td.name')].map(td => {
		const r = document.createRange(); r.selectNodeContents(td);
		return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; })`))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 4 || slices.Max(lines) != 1 {
		t.Errorf("the names of the kinds' tables take %v lines, want 4 names of 1 line", lines)
	}
	screenshot(t, bctx, "")
}
