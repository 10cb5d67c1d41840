package proctest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/bigstore"
)

// TestServeStaysBounded serves a session of a million records with
// records serve, as a process of its own, and asks each of its pages
// (and each page's JSON) in turn: the server's peak anonymous memory
// while it answers each stays within viewsRSSBound, as the commands'
// views do (issue 47), since a page lists a bounded number of records
// and reads the session as the views read it.
func TestServeStaysBounded(t *testing.T) {
	if testing.Short() || os.Getenv(bigTestsEnv) != "1" {
		t.Skip("builds a session of a million records, about a minute: set " + bigTestsEnv + "=1")
	}
	dir := buildBigStore(t, "serve1m", "-records", "1000000", "-sessions", "1", "-value", "100", "-huge-every", "0")
	_, records := bins(t)
	cmd := exec.Command(records, "--dir", dir, "serve")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("records serve: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if base == "" {
		t.Fatalf("records serve printed %q", line)
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	get := func(path string) []byte {
		t.Helper()
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v\n%.500s", path, resp.Status, err, b)
		}
		return b
	}
	var session struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(get("/api/sessions"), &session); err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Attributes map[string]any `json:"attributes"`
	}
	if err := json.Unmarshal(get("/api/sessions/"+session.ID+"/records/500000"), &rec); err != nil {
		t.Fatal(err)
	}
	why := ""
	for k, v := range rec.Attributes {
		why = fmt.Sprintf("/why?kind=work&key=%s&value=%v", k, v)
		break
	}
	s := "/sessions/" + session.ID
	pages := []string{"/sessions", s, s + "?from=999950", s + "/records/500000", why, "/diff?a=" + session.ID + "&b=" + session.ID + "&fail_slower=10", "/cost"}
	apis := []string{"/api/sessions/" + session.ID + "/records?from=999950"}
	for _, p := range pages {
		apis = append(apis, "/api"+p)
	}
	for _, p := range append(pages, apis...) {
		stop := bigstore.SamplePeakAnon(cmd.Process.Pid)
		began := time.Now()
		n := len(get(p))
		peak := stop()
		t.Logf("%-60s %8d bytes in %6v, peak anonymous %5.1f MiB", p, n, time.Since(began).Round(time.Millisecond), float64(peak)/(1<<20))
		if peak > viewsRSSBound {
			t.Errorf("records serve answering %s took %.1f MiB of anonymous memory, want at most %d MiB", p, float64(peak)/(1<<20), viewsRSSBound>>20)
		}
	}
}
