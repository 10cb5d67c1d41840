package main

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The fields docs/FORMAT.md §8.4 gives a row of cost's work table, with
// what they mean, are the fields cost --json prints: a reader checking
// the counts against a cache's own counters reads them there.
func TestCostJSONFieldsAsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "### 8.4 `records cost --json`")
	if start < 0 {
		t.Fatal("docs/FORMAT.md has no section 8.4 `records cost --json`")
	}
	section := doc[start:]
	if end := strings.Index(section[1:], "\n#"); end >= 0 {
		section = section[:end+1]
	}
	documented := map[string]bool{}
	// A row of the table names its field, and in its meaning the fields
	// of time that go with it ("`hit_ns` their time").
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` +\\|.*$").FindAllStringSubmatch(section, -1) {
		documented[m[1]] = true
		for _, ns := range regexp.MustCompile("`([a-z_]+_ns)` their time").FindAllStringSubmatch(m[0], -1) {
			documented[ns[1]] = true
		}
	}
	dir := writeAnswersStore(t)
	var printed map[string]any
	for _, row := range decodeLines(t, mustRun(t, "cost", "--json", "--top", "0", "--dir", dir)) {
		if row["table"] == "redone" {
			printed = row
			break
		}
	}
	if printed == nil {
		t.Fatal("cost --json printed no row of table redone")
	}
	if got, want := slices.Sorted(maps.Keys(printed)), slices.Sorted(maps.Keys(documented)); !slices.Equal(got, want) {
		t.Errorf("cost --json prints the fields\n%q\ndocs/FORMAT.md §8.4 documents\n%q", got, want)
	}
}
