// Package report draws one session as a self-contained HTML page: the
// page records report writes, and a web view of a store can serve.
// summary.NewReport lays the session out (its kinds, slowest records,
// critical path and timeline rows); Build reads again the records the
// page shows and makes the page; Page.Write writes it.
//
// The page fetches nothing: its style and script are inline, and its
// Content Security Policy lets only them run, named by their hashes.
// Page.WriteBody writes what the page shows without them, for records
// serve, which serves Style and Script as files of its own.
// html/template escapes every value for where it goes (text, attribute,
// SVG), and every text from the store is cleaned as on a terminal, so a
// record field such as <img src=x onerror=alert(1)> shows as text and runs
// nothing. Values are cut (ValueMax) and a bar's details bounded
// (DetailsMax), so a page stays quick to open whatever the session holds.
package report

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
)

// The page, and what it carries inline: one file, nothing to fetch.
var (
	//go:embed report.html
	html string
	//go:embed report.css
	style string
	//go:embed report.js
	script string
)

// Style and Script are the page's style sheet and script, which its
// Content Security Policy names by their hashes (CSPHash).
var Style, Script = style, script

// page is parsed once.
var page = template.Must(template.New("report").Parse(html))

// csp is the page's Content Security Policy: nothing may be fetched, and
// only the page's own style and script, named by their hashes, may run.
// Should anything escape the escaping, the browser still runs nothing of
// it.
var csp = fmt.Sprintf("default-src 'none'; img-src data:; style-src '%s'; script-src '%s'; base-uri 'none'; form-action 'none'",
	CSPHash(style), CSPHash(script))

// CSPHash returns the Content Security Policy source that allows s, an
// inline style or script, by its hash.
func CSPHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
