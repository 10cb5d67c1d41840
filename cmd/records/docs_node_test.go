package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collectorDocPath is the document whose Node.js program TestDocNodeProgram
// runs.
const collectorDocPath = "../../docs/COLLECTOR.md"

// TestDocNodeProgram runs docs/COLLECTOR.md's Node.js program as the page
// says to: saved as build.mjs beside the three packages it names
// (installed with npm ci from collector/testdata/node's lock, into a
// directory of the test's own), sending to an OTLP/HTTP endpoint, here
// the test's in place of the Collector's OTLP/HTTP port. It must run as
// it is (issue 33: it lacked an import and ran only as a module), and
// send the compile it records, with the Resource it says.
func TestDocNodeProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("runs npm ci and node")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on this machine", tool)
		}
	}
	doc, err := os.ReadFile(collectorDocPath)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "## A first sender: Node.js")
	_, block, ok2 := strings.Cut(after, "```js\n")
	program, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("no ```js block in %s's section \"A first sender: Node.js\"", collectorDocPath)
	}
	// The program sends to a local Collector's OTLP/HTTP port; the test
	// sends it to its own server on a free port instead, so nothing binds
	// the Collector's.
	m := localEndpoint.FindStringSubmatch(program)
	if m == nil {
		t.Fatal("the page's program sends to no local OTLP/HTTP endpoint")
	}
	url, port := m[0], m[1]
	program = strings.ReplaceAll(program, url, "\x00endpoint\x00")
	if strings.Contains(program, port) {
		t.Fatalf("the page's program names %s other than in its endpoint %s", port, url)
	}

	// OTLP/HTTP, JSON as this exporter sends it (or protobuf).
	var (
		mu     sync.Mutex
		bodies [][]byte
		json   []bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		isJSON := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
		mu.Lock()
		bodies, json = append(bodies, body), append(json, isJSON)
		mu.Unlock()
		if isJSON {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()

	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "node", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "build.mjs"), []byte(strings.ReplaceAll(program, "\x00endpoint\x00", srv.URL+"/v1/traces")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	npm := exec.CommandContext(ctx, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		t.Skipf("npm ci could not install the packages (offline?): %v\n%s", err, out)
	}
	node := exec.CommandContext(ctx, "node", "build.mjs")
	node.Dir = dir
	var out bytes.Buffer
	node.Stdout, node.Stderr = &out, &out
	if err := node.Run(); err != nil {
		t.Fatalf("node build.mjs: %v\n%s", err, out.String())
	}

	mu.Lock()
	defer mu.Unlock()
	var reqs []*coltracepb.ExportTraceServiceRequest
	for i, body := range bodies {
		if json[i] {
			reqs = append(reqs, decodeOTLP(t, body))
			continue
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Fatalf("not OTLP protobuf: %v", err)
		}
		reqs = append(reqs, &req)
	}
	found := false
	for _, req := range reqs {
		for _, rs := range req.ResourceSpans {
			resource := map[string]string{}
			for _, kv := range rs.GetResource().GetAttributes() {
				resource[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					attrs := map[string]string{}
					for _, kv := range sp.Attributes {
						attrs[kv.Key] = kv.GetValue().GetStringValue()
					}
					if sp.Name == "compile app" && attrs["records.kind"] == "artifact" && attrs["records.effect"] == "changed" &&
						resource["service.name"] == "node-build" && resource["os.type"] != "" {
						found = true
					}
				}
			}
		}
	}
	if !found {
		t.Errorf("the page's program sent %d requests, none with its compile and its Resource:\n%v", len(reqs), reqs)
	}
}

// localEndpoint matches a local Collector's OTLP/HTTP traces endpoint.
var localEndpoint = regexp.MustCompile(`http://127\.0\.0\.1(:[0-9]+)/v1/traces`)
