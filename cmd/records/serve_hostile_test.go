package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/otelrecords/otelrecords/sessions"
)

// TestServeHostileStore serves a store whose every field is an attack —
// markup in a label, a service, a kind, names, keys and values; a name of
// 1 MiB; bytes that are not UTF-8 — and opens each page in Chromium. The
// payloads, if any ran, would set window.pwned or fetch an address the
// test counts: neither happens, the markup shows as text, and every
// answer carries the Content Security Policy.
func TestServeHostileStore(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium")
	}
	chromium(t)
	var hits atomic.Int64
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer trap.Close()
	run := func(js string) string { return strings.ReplaceAll(js, "TRAP", trap.URL) }
	payloads := []string{
		run(`<script>window.pwned=1;fetch('TRAP/script')</script>`),
		run(`<img src=x onerror="window.pwned=2;fetch('TRAP/img')">`),
		run(`"><svg onload="window.pwned=3;fetch('TRAP/svg')">`),
		run(`'];window.pwned=4;fetch('TRAP/js');//`),
		run(`javascript:window.pwned=5;fetch('TRAP/href')`),
		run(`</title></style></script><script src="TRAP/src.js"></script>`),
	}
	bad := "not utf-8 \xff\xfe\xc0 " + payloads[0]
	kind := `x"><img src=x onerror=window.pwned=6>`
	attrs := sessions.Attrs{str("autotune.key", payloads[1]), str(payloads[2], payloads[3]), str("href", payloads[4]),
		str("bad", bad), str(strings.Repeat("k", 1<<20), "a key of 1 MiB")}
	dir := filepath.Join(t.TempDir(), "hostile")
	recordSteps(t, dir, goldenStart1, payloads[0]+bad, sessions.Attrs{str("service.name", payloads[5])}, []step{
		{0, sessions.MarksKind, sessions.Observed, sessions.Record{Name: payloads[2], Wall: 40 * time.Millisecond, TraceID: goldenTrace, SpanID: spanLoad}},
		{time.Millisecond, "autotune", sessions.Changed, sessions.Record{Name: payloads[1], Wall: 10 * time.Millisecond, Attributes: attrs,
			TraceID: goldenTrace, SpanID: spanTune, ParentSpanID: spanLoad, Status: sessions.Status{Code: "error", Description: payloads[5]},
			Events: []sessions.Event{{Name: payloads[3], Attributes: sessions.Attrs{str("e", payloads[0])}}}}},
		{2 * time.Millisecond, kind, sessions.Changed, sessions.Record{Name: strings.Repeat("n", 1<<20) + payloads[0], Wall: time.Millisecond}},
		{3 * time.Millisecond, "autotune", sessions.Changed, sessions.Record{Name: bad, Wall: time.Millisecond, Attributes: attrs}},
	})
	recordSteps(t, dir, goldenStart2, payloads[0]+bad, nil, []step{
		{0, "autotune", sessions.Changed, sessions.Record{Name: payloads[1], Wall: 30 * time.Millisecond, Attributes: attrs}},
	})
	ids := serverSessions(t, dir)
	base := startServe(t, dir)
	why := "/why?" + url.Values{"kind": {"autotune"}, "key": {"autotune.key"}, "value": {payloads[1]}}.Encode()
	pages := []string{"/sessions", "/sessions/" + ids[0], "/sessions/" + ids[0] + "/records/1", "/sessions/" + ids[0] + "/records/2",
		why, "/diff?a=" + ids[1] + "&fail_slower=10", "/cost", "/sessions?label=" + url.QueryEscape(payloads[0])}
	for _, p := range pages {
		get(t, base, p)
		get(t, base, "/api"+p)
	}

	bctx, finish := openBrowser(t, base+"/sessions")
	defer finish()
	for i, p := range pages {
		if err := chromedp.Do(bctx, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("footer"))); err != nil {
			t.Fatalf("open %s: %v", p, err)
		}
		if v := evalJS[string](t, bctx, `String(window.pwned)`); v != "undefined" {
			t.Errorf("%s: a payload ran: window.pwned = %s", p, v)
		}
		if n := evalJS[int](t, bctx, `document.querySelectorAll('main img, main svg:not(#timeline), main script, body script:not([src^="/static/"]), [onerror], [onload]').length`); n != 0 {
			t.Errorf("%s: %d elements made from a payload", p, n)
		}
		shot(t, bctx, fmt.Sprintf("hostile-%d", i), "")
	}
	if !strings.Contains(evalJS[string](t, bctx, `document.body.innerText`), "<script>window.pwned=1") {
		t.Error("the label's markup is not shown as text")
	}
	time.Sleep(300 * time.Millisecond) // a fetch under way would land
	if n := hits.Load(); n != 0 {
		t.Errorf("the payloads fetched the trap %d times", n)
	}
}
