package instruments_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/otelrecords/otelrecords/instruments"
)

var update = flag.Bool("update", false, "rewrite the table in docs/COLLECTOR.md")

// The table's rows are well formed: one name each, a unit, a meaning, a
// component, series told apart by one attribute key.
func TestTableWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, in := range instruments.Of(instruments.Both) {
		if names[in.Name] {
			t.Errorf("%s: twice in the table", in.Name)
		}
		names[in.Name] = true
		if in.Unit == "" || in.Description == "" || in.Where == 0 || len(in.Points) == 0 {
			t.Errorf("%s: a unit, a description, a component and a series each, please: %+v", in.Name, in)
		}
		fields := map[string]bool{}
		for _, p := range in.Points {
			if fields[p.Field] {
				t.Errorf("%s: reads %s twice", in.Name, p.Field)
			}
			fields[p.Field] = true
			if (len(in.Points) == 1) != (p.Key == "") || p.Key != in.Points[0].Key {
				t.Errorf("%s: series need one attribute key to tell them apart (and one series none): %+v", in.Name, in.Points)
			}
		}
	}
}

// "dropped" names one thing: records let go unstored, by cause, in one
// instrument that both components publish. (Stats.TracesDropped, the keep-
// by-trace policy's choice, is published as traces.unchanged.)
func TestDroppedMeansOneThing(t *testing.T) {
	var dropped []string
	for _, in := range instruments.Of(instruments.Both) {
		if strings.Contains(in.Name, "drop") {
			dropped = append(dropped, in.Name)
		}
	}
	if len(dropped) != 1 || dropped[0] != instruments.DroppedName {
		t.Fatalf("instruments named for dropping: %v, want only %s", dropped, instruments.DroppedName)
	}
	for _, in := range instruments.Of(instruments.Both) {
		if in.Name != instruments.DroppedName {
			continue
		}
		if in.Where != instruments.Both || in.Kind != instruments.Counter || in.Unit != "{record}" {
			t.Errorf("%s: %+v, want a counter of records both components publish", in.Name, in)
		}
		for _, p := range in.Points {
			if p.Key != "cause" || !strings.Contains(in.Description, p.Value) {
				t.Errorf("%s: series %+v is not a cause its description names", in.Name, p)
			}
		}
	}
}

// A field the table names that the component's Stats lacks fails
// Register, rather than reading 0 for ever.
func TestRegisterRefusesMissingField(t *testing.T) {
	type short struct{ Written int64 }
	mp := sdkmetric.NewMeterProvider()
	defer mp.Shutdown(context.Background())
	if _, err := instruments.Register(mp.Meter("t"), instruments.SDK, func() short { return short{} }); err == nil {
		t.Fatal("registered a table whose fields a Stats lacks")
	}
}

const (
	docsPath  = "../docs/COLLECTOR.md"
	docsBegin = "<!-- instruments: the table in package instruments, as `go test ./instruments -update` writes it -->\n"
	docsEnd   = "<!-- /instruments -->\n"
)

// docsTable renders the table as docs/COLLECTOR.md shows it.
func docsTable() string {
	var b strings.Builder
	b.WriteString("| name | kind | unit | published by | series: Stats field | meaning |\n|---|---|---|---|---|---|\n")
	for _, in := range instruments.Of(instruments.Both) {
		kind := map[instruments.Kind]string{instruments.Counter: "counter", instruments.Gauge: "gauge"}[in.Kind]
		var series []string
		for _, p := range in.Points {
			if p.Key == "" {
				series = append(series, fmt.Sprintf("`%s`", p.Field))
			} else {
				series = append(series, fmt.Sprintf("`%s=%s`: `%s`", p.Key, p.Value, p.Field))
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s | %s |\n", in.Name, kind, in.Unit, in.Where, strings.Join(series, "; "), in.Description)
	}
	return b.String()
}

// docs/COLLECTOR.md lists the table as it is, generated from it.
func TestDocsListTheTable(t *testing.T) {
	raw, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, docsBegin), strings.Index(doc, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no block between %q and %q", docsPath, docsBegin, docsEnd)
	}
	want := docsTable()
	if got := doc[i+len(docsBegin) : j]; got != want {
		if *update {
			if err := os.WriteFile(docsPath, []byte(doc[:i+len(docsBegin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s lists another table; run go test ./instruments -update. Want:\n%s", docsPath, want)
	}
}
