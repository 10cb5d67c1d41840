package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/otelrecords/otelrecords/collector/internal/jaegertest"
)

// shippedConfig is a Collector configuration the repository shows its
// users: a file they run as it is, or a YAML block of a document (the
// README, docs/COLLECTOR.md) they copy.
type shippedConfig struct {
	name string // the file, or the document and the block's line
	yaml string
	// file: a configuration shipped whole, which a user runs as it is,
	// two of them on one host too. A block of a document shows what it
	// is about, and may be a fragment (exporters: alone).
	file bool
}

// configFiles are the configurations shipped as files, relative to this
// directory. docs/collector/edge.yaml is not among them: it is for an
// otelcol-contrib, whose load-balancing exporter this distribution does
// not have (TestEdgeRoutesBySession checks it).
var configFiles = []string{
	"config.yaml",
	"config-persistent.yaml",
	"../../../docs/collector/agent.yaml",
	"../../../docs/collector/gateway.yaml",
	"../../../docs/collector/gateway-processor.yaml",
}

// configDocs are the documents whose YAML blocks are Collector
// configurations: the README and every document under docs/ (a glob).
// docs/COLLECTOR.md must hold blocks, so that a moved page does not
// leave the test checking nothing.
var configDocs = []string{"../../../README.md", "../../../docs/*.md"}

// collectorDoc is the page of the Collector, whose YAML blocks the tests
// must find.
const collectorDoc = "../../../docs/COLLECTOR.md"

// shippedConfigs returns every configuration the repository shows: the
// files, and every ```yaml block of the documents.
func shippedConfigs(t *testing.T) []shippedConfig {
	t.Helper()
	var out []shippedConfig
	for _, f := range configFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, shippedConfig{name: filepath.Base(f), yaml: string(b), file: true})
	}
	var docs []string
	for _, pattern := range configDocs {
		matched, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, matched...)
	}
	fromCollectorDoc := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for line, y := range yamlBlocks(string(b)) {
			out = append(out, shippedConfig{name: fmt.Sprintf("%s:%d", filepath.Base(doc), line), yaml: y})
			if doc == collectorDoc {
				fromCollectorDoc++
			}
		}
	}
	if fromCollectorDoc == 0 {
		t.Fatalf("no ```yaml block in %s (of %v): the test would check none of its configurations", collectorDoc, docs)
	}
	return out
}

// yamlBlocks returns the ```yaml blocks of a Markdown document by the
// line of their opening fence.
func yamlBlocks(doc string) map[int]string {
	blocks := map[int]string{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```yaml" {
			continue
		}
		start := i + 1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		blocks[start] = strings.Join(lines[start:i], "\n") + "\n"
	}
	return blocks
}

var (
	// endpointRE is an endpoint: host:port, in block or flow style.
	endpointRE = regexp.MustCompile(`\bendpoint:(\s*)([A-Za-z0-9_.-]*):(\d+)\b`)
	// portRE is a port: key of its own line: in these configurations,
	// the Collector's own metrics port.
	portRE = regexp.MustCompile(`(?m)^(\s*port:\s*)(\d+)\b`)
	// directoryRE is a directory: value.
	directoryRE = regexp.MustCompile(`(?m)^(\s*directory:\s*)(\S+)`)
)

// listening are the hosts an endpoint listens on; any other host is a
// backend the Collector sends to.
var listening = []string{"", "0.0.0.0", "127.0.0.1", "localhost"}

// rewritten is a configuration as a test runs it.
type rewritten struct {
	yaml string
	// listens are the ports it listens on: its receivers', and its own
	// metrics' (metrics, 0 if it names none).
	listens []int
	metrics int
	// http is the OTLP/HTTP receiver's port (the endpoint on 4318), 0 if
	// none.
	http int
	// sends is whether it sends to a backend (an endpoint on another
	// host): downstream, now.
	sends bool
}

// rewrite makes cfg runnable by a test, changing nothing but where it
// listens, sends and writes: every port it listens on becomes a free
// loopback port (tests never bind 4317, 4318 or 8888), every endpoint on
// another host becomes downstream, and every directory a directory under
// dir.
func rewrite(t *testing.T, cfg, dir, downstream string) rewritten {
	t.Helper()
	var r rewritten
	n := 0
	out := endpointRE.ReplaceAllStringFunc(cfg, func(m string) string {
		sub := endpointRE.FindStringSubmatch(m)
		if !slices.Contains(listening, sub[2]) {
			r.sends = true
			return "endpoint:" + sub[1] + downstream
		}
		p := jaegertest.FreePort(t)
		r.listens = append(r.listens, p)
		if sub[3] == "4318" {
			r.http = p
		}
		return "endpoint:" + sub[1] + "127.0.0.1:" + strconv.Itoa(p)
	})
	out = portRE.ReplaceAllStringFunc(out, func(m string) string {
		sub := portRE.FindStringSubmatch(m)
		r.metrics = jaegertest.FreePort(t)
		r.listens = append(r.listens, r.metrics)
		return sub[1] + strconv.Itoa(r.metrics)
	})
	r.yaml = directoryRE.ReplaceAllStringFunc(out, func(m string) string {
		n++
		return directoryRE.FindStringSubmatch(m)[1] + filepath.Join(dir, fmt.Sprintf("dir%d", n))
	})
	return r
}

// files writes c, rewritten, into dir and returns the --config
// files a Collector runs it with. A fragment (no service: section) comes
// with a second file: an OTLP receiver and a pipeline through its
// processors into its exporters (nop if it has none), as a user puts it
// into a configuration of their own. A document's block that names no
// port for the Collector's own metrics comes with a file that gives them
// a free one, as a test gives every listener.
func (c shippedConfig) files(t *testing.T, dir, downstream string) ([]string, rewritten) {
	t.Helper()
	r := rewrite(t, c.yaml, dir, downstream)
	path := filepath.Join(dir, "config.yaml")
	write(t, path, r.yaml)
	files := []string{path}
	cm, err := confmaptest.LoadConf(path)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if !cm.IsSet("service") {
		names := func(section string) string {
			sub, err := cm.Sub(section)
			if err != nil {
				t.Fatal(err)
			}
			var ns []string
			for k := range sub.ToStringMap() {
				ns = append(ns, k)
			}
			slices.Sort(ns)
			return strings.Join(ns, ", ")
		}
		exporters := names("exporters")
		extra := ""
		if exporters == "" {
			exporters, extra = "nop", "exporters:\n  nop:\n"
		}
		p := jaegertest.FreePort(t)
		r.listens = append(r.listens, p)
		r.http = p
		base := filepath.Join(dir, "pipeline.yaml")
		write(t, base, fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
%sservice:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [%s]
      exporters: [%s]
`, p, extra, names("processors"), exporters))
		files = append(files, base)
	}
	if r.metrics == 0 && !c.file {
		r.metrics = jaegertest.FreePort(t)
		r.listens = append(r.listens, r.metrics)
		telemetry := filepath.Join(dir, "telemetry.yaml")
		write(t, telemetry, fmt.Sprintf(`service:
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %d
`, r.metrics))
		files = append(files, telemetry)
	}
	return files, r
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
