package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// serverFacts is what the server report's test reads off the page.
type serverFacts struct {
	Bars       int      `json:"bars"`       // g.bar elements in the timeline
	Narrowest  float64  `json:"narrowest"`  // the narrowest bar, in screen pixels
	Rows       int      `json:"rows"`       // rows of bars: distinct y
	Groups     []string `json:"groups"`     // the group table's rows: name and count
	Labels     []string `json:"labels"`     // the group rows' labels in the timeline
	TipOfGroup string   `json:"tipOfGroup"` // what hovering a group's bar shows
	Overflows  int      `json:"overflows"`  // group labels wider than the timeline
}

const serverFactsJS = `(() => {
  const bars = [...document.querySelectorAll('#timeline g.bar')];
  const svg = document.getElementById('timeline').getBoundingClientRect();
  const ys = new Set(bars.map(b => b.querySelector('rect').getAttribute('y')));
  const labels = [...document.querySelectorAll('#timeline .grouplabel')];
  return {
    bars: bars.length,
    narrowest: Math.min(...bars.map(b => b.querySelector('rect').getBoundingClientRect().width)),
    rows: ys.size,
    groups: [...document.querySelectorAll('table.groups tbody tr')].map(r => r.cells[1].textContent + ' ' + r.cells[2].textContent),
    labels: labels.map(l => l.textContent),
    tipOfGroup: (() => { const g = document.querySelector('#timeline g.bar.group'); return g ? g.getAttribute('aria-label') : ''; })(),
    overflows: labels.filter(l => l.getBoundingClientRect().right > svg.right).length,
  };
})()`

// A server's session of 1,000 requests reads well (issue 23): the report
// groups its roots by kind and name (count, median, p90, max), draws the
// slowest few whole and the others a row per group, gives every label in
// full on hover, and draws no sliver under a pixel. The screenshot is
// saved in the test's temporary directory, and where -report-png says.
func TestReportOfAServerSession(t *testing.T) {
	exe := chromium(t)
	dir := t.TempDir()
	serverRun(t, dir, "server", 20*time.Millisecond, 200, 250) // 4 x 250 requests
	ids := serverSessions(t, dir)
	out := filepath.Join(t.TempDir(), "report.html")
	mustRun(t, "report", "--dir", dir, "--session", ids[0], "-o", out)

	bctx, finish := openInChromium(t, exe, out)
	defer finish()
	facts, err := chromedp.Run(bctx, chromedp.Evaluate[serverFacts](serverFactsJS))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	t.Logf("%+v", facts)
	if len(facts.Groups) != 1 || !strings.HasSuffix(facts.Groups[0], " 1000") {
		t.Errorf("groups %q: want the 1,000 requests in one", facts.Groups)
	}
	if len(facts.Labels) != 1 || !strings.Contains(facts.Labels[0], "×1000 · median ") || facts.Overflows != 0 {
		t.Errorf("group labels %q (%d wider than the timeline): want the requests' row named with its count and median", facts.Labels, facts.Overflows)
	}
	if facts.Narrowest < 1 {
		t.Errorf("the narrowest bar is %.2f pixels wide: a sliver", facts.Narrowest)
	}
	// The five slowest requests, each with its compile, and the grouped
	// row: a screenful, not a row per request.
	if facts.Rows > 30 || facts.Bars > 200 {
		t.Errorf("%d bars on %d rows: the requests are not grouped", facts.Bars, facts.Rows)
	}
	if !strings.Contains(facts.TipOfGroup, "1000 roots grouped: median ") {
		t.Errorf("hovering a group's bar shows %q", facts.TipOfGroup)
	}
	screenshot(t, bctx, *reportPNG)
}
