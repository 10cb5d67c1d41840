package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The documents' sample outputs are real, and stay so: each ```console
// block that follows a line <!-- records-output: STORE --> is run here,
// command by command, on STORE, and the block must read as the commands
// print (stdout, then stderr). STORE is
//
//	golden   the golden stores (golden_test.go): A shown as ./ci-store,
//	         B as ./laptop-store
//	example  three runs of examples/otel on its pretend clock
//	         (example_store_test.go), shown as /tmp/exstore
//
// A command without --dir reads the store's first directory. `$ echo $?`
// prints the exit status of the command before it; `records watch` runs
// while the example does, and its block ends in ^C, the interrupt that
// ends it. go test -run TestDocOutputs -update rewrites the blocks in
// place. The blocks are docs/CLI.md's, but any document's are run:
// README.md and every docs/*.md (docPaths).
const (
	readmePath = "../../README.md"
	cliDocPath = "../../docs/CLI.md"
)

// docPaths returns the documents whose console blocks are checked: the
// README and every document under docs/.
func docPaths(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(docs, cliDocPath) {
		t.Fatalf("no %s among %v", cliDocPath, docs)
	}
	return append([]string{readmePath}, docs...)
}

// readmeStores are the stores a records-output block may name: how each
// is built, and what its directories are called in the documents.
var readmeStores = map[string]struct {
	names []string                                         // as the documents show them, first the default store
	build func(t *testing.T, watches [][]string) readmeRun // the directories, in the order of names
}{
	"golden": {[]string{"./ci-store", "./laptop-store"}, func(t *testing.T, watches [][]string) readmeRun {
		if len(watches) > 0 {
			t.Fatal("records watch needs a program writing: show it on the example store")
		}
		return readmeRun{dirs: []string{writeGoldenStore(t), writeGoldenStoreB(t)}}
	}},
	"example": {[]string{"/tmp/exstore"}, func(t *testing.T, watches [][]string) readmeRun {
		dir, watched := writeExampleStore(t, watches)
		return readmeRun{dirs: []string{dir}, watched: watched}
	}},
}

// readmeRun is a store built for the documents: its directories, and
// what each records watch printed while it was written.
type readmeRun struct {
	dirs    []string
	watched map[string]string // by the watch's arguments, joined by spaces
}

// consoleBlock is a ```console block of a document: the lines between
// its fences, and the store its marker names ("" when it has none).
type consoleBlock struct {
	store      string
	start, end int // the document's lines [start, end) are the block's body
}

var outputMarker = regexp.MustCompile(`^<!-- records-output: (\S+) -->$`)

// consoleBlocks finds the console blocks of the document at path.
func consoleBlocks(t *testing.T, path string, lines []string) []consoleBlock {
	t.Helper()
	var blocks []consoleBlock
	for i := 0; i < len(lines); i++ {
		if lines[i] != "```console" {
			continue
		}
		b := consoleBlock{start: i + 1}
		if i > 0 {
			if m := outputMarker.FindStringSubmatch(lines[i-1]); m != nil {
				b.store = m[1]
			}
		}
		for i++; i < len(lines) && lines[i] != "```"; i++ {
		}
		if i == len(lines) {
			t.Fatalf("%s: the console block at line %d does not end", path, b.start)
		}
		b.end = i
		blocks = append(blocks, b)
	}
	return blocks
}

// commandLines returns the commands of a block's body, as written after
// "$ ": what the block shows each printing follows it, up to the next.
func commandLines(body []string) []string {
	var out []string
	for _, l := range body {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			out = append(out, cmd)
		}
	}
	return out
}

// commandArgs returns the arguments of a `records ...` step, without its
// comment, and whether it is one.
func commandArgs(line string) ([]string, bool) {
	line, _, _ = strings.Cut(line, " #")
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "records" {
		return nil, false
	}
	return fields[1:], true
}

// TestDocOutputs runs the commands of every records-output block of the
// documents and compares what they print with the block.
func TestDocOutputs(t *testing.T) {
	type doc struct {
		path   string
		lines  []string
		blocks []consoleBlock
	}
	var docs []doc
	var all []docBlocks
	for _, path := range docPaths(t) {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d := doc{path: path, lines: strings.Split(string(raw), "\n")}
		d.blocks = consoleBlocks(t, path, d.lines)
		docs = append(docs, d)
		all = append(all, docBlocks{d.lines, d.blocks})
	}
	runs := map[string]readmeRun{}
	checked := 0
	for _, d := range docs {
		lines := d.lines
		for _, b := range slices.Backward(d.blocks) { // from the end, so that -update keeps the earlier lines where they are
			body := lines[b.start:b.end]
			if b.store == "" {
				for _, l := range body {
					if _, ok := commandArgs(strings.TrimPrefix(l, "$ ")); ok && strings.HasPrefix(l, "$ ") {
						t.Errorf("%s:%d: a records command in a console block without a <!-- records-output: STORE --> line: its output would go unchecked", d.path, b.start)
						break
					}
				}
				continue
			}
			store, ok := readmeStores[b.store]
			if !ok {
				t.Errorf("%s:%d: records-output names the store %q; there are %v", d.path, b.start-1, b.store, slices.Sorted(maps.Keys(readmeStores)))
				continue
			}
			run, built := runs[b.store]
			if !built {
				run = store.build(t, watchesOf(all, b.store))
				runs[b.store] = run
			}
			var got []string
			code := 0
			for _, line := range commandLines(body) {
				var out string
				var err error
				out, code, err = stepOutput(t, line, store.names, run, code)
				if err != nil {
					t.Errorf("%s:%d: %v", d.path, b.start, err)
					continue
				}
				got = append(got, "$ "+line)
				got = append(got, strings.Split(strings.TrimSuffix(out, "\n"), "\n")...)
			}
			checked++
			if *update {
				lines = slices.Concat(lines[:b.start], got, lines[b.end:])
				continue
			}
			if want := strings.Join(body, "\n"); strings.Join(got, "\n") != want {
				t.Errorf("%s:%d: the block differs from what its commands print (go test -run TestDocOutputs -update rewrites it):\n%s",
					d.path, b.start, firstDiff(want, strings.Join(got, "\n")))
			}
		}
		if *update {
			if err := os.WriteFile(d.path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if checked == 0 {
		t.Errorf("no document has a records-output block (%s should)", cliDocPath)
	}
}

// docBlocks is a document's lines and its console blocks.
type docBlocks struct {
	lines  []string
	blocks []consoleBlock
}

// watchesOf returns the records watch commands of the documents' blocks
// on store: they run while the store is written.
func watchesOf(docs []docBlocks, store string) [][]string {
	var watches [][]string
	for _, d := range docs {
		for _, b := range d.blocks {
			if b.store != store {
				continue
			}
			for _, line := range commandLines(d.lines[b.start:b.end]) {
				if args, ok := commandArgs(line); ok && len(args) > 0 && args[0] == "watch" {
					watches = append(watches, args)
				}
			}
		}
	}
	return watches
}

// stepOutput runs one command of a block and returns what it prints, with
// the store's directories under the names the documents give them, and its
// exit status. lastCode is the exit status of the step before, for
// `echo $?`.
func stepOutput(t *testing.T, line string, names []string, run readmeRun, lastCode int) (string, int, error) {
	t.Helper()
	if line == "echo $?" {
		return strconv.Itoa(lastCode) + "\n", 0, nil
	}
	args, ok := commandArgs(line)
	if !ok || len(args) == 0 {
		return "", 0, fmt.Errorf("$ %s: not a records command nor echo $?", line)
	}
	key := strings.Join(args, " ")
	show := make([]string, 0, 2*len(names))
	for i, name := range names {
		show = append(show, run.dirs[i], name)
		for j, a := range args {
			if a == name {
				args[j] = run.dirs[i]
			}
		}
	}
	if !slices.Contains(args, "--dir") {
		args = append(args, "--dir", run.dirs[0])
	}
	var out string
	code := 0
	if args[0] == "watch" {
		out = run.watched[key] + "^C\n" // an interrupt ends it, with status 0
	} else {
		var stdout, stderr string
		code, stdout, stderr = runCLI(t, args...)
		out = stdout + stderr
	}
	return strings.NewReplacer(show...).Replace(out), code, nil
}

// TestCLICommandTable holds docs/CLI.md's table of commands to the
// command line: every command has a row, and every row names commands
// that exist.
func TestCLICommandTable(t *testing.T) {
	raw, err := os.ReadFile(cliDocPath)
	if err != nil {
		t.Fatal(err)
	}
	commands := map[string]bool{}
	for _, c := range (&app{}).rootCommand().Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" {
			commands[c.Name()] = false
		}
	}
	rows := commandTable(string(raw))
	if len(rows) == 0 {
		t.Fatalf("%s has no table of commands (| command | what it says |)", cliDocPath)
	}
	named := regexp.MustCompile("`records ([a-z-]+)")
	for _, row := range rows {
		ms := named.FindAllStringSubmatch(row, -1)
		if len(ms) == 0 {
			t.Errorf("%s: the row %q names no records command", cliDocPath, row)
		}
		for _, m := range ms {
			if _, ok := commands[m[1]]; !ok {
				t.Errorf("%s: the row %q names records %s, which is no command", cliDocPath, row, m[1])
				continue
			}
			commands[m[1]] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		if !commands[name] {
			t.Errorf("records %s is not in %s's table of commands", name, cliDocPath)
		}
	}
}

// commandTable returns the first cells of the rows of a document's table
// of commands: the one whose header is | command | what it says |.
func commandTable(doc string) []string {
	var rows []string
	in := false
	for l := range strings.Lines(doc) {
		l = strings.TrimSpace(l)
		switch {
		case l == "| command | what it says |":
			in = true
		case !in:
		case !strings.HasPrefix(l, "|"):
			return rows
		case strings.HasPrefix(l, "|---"):
		default:
			cells := strings.Split(l, " | ")
			rows = append(rows, strings.TrimPrefix(cells[0], "| "))
		}
	}
	return rows
}
