package main

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The README's sample outputs are real, and stay so: each ```console
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
// ends it. go test -run TestREADME -update rewrites the blocks in place.
const readmePath = "../../README.md"

// readmeStores are the stores a records-output block may name: how each
// is built, and what its directories are called in the README.
var readmeStores = map[string]struct {
	names []string                                         // as the README shows them, first the default store
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

// readmeRun is a store built for the README: its directories, and what
// each records watch printed while it was written.
type readmeRun struct {
	dirs    []string
	watched map[string]string // by the watch's arguments, joined by spaces
}

// consoleBlock is a ```console block of the README: the lines between its
// fences, and the store its marker names ("" when it has none).
type consoleBlock struct {
	store      string
	start, end int // README lines [start, end) are the block's body
}

var outputMarker = regexp.MustCompile(`^<!-- records-output: (\S+) -->$`)

// consoleBlocks finds the console blocks of the README.
func consoleBlocks(t *testing.T, lines []string) []consoleBlock {
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
			t.Fatalf("%s: the console block at line %d does not end", readmePath, b.start)
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

// TestREADME runs the commands of every records-output block of the
// README and compares what they print with the block.
func TestREADME(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	blocks := consoleBlocks(t, lines)
	runs := map[string]readmeRun{}
	checked := 0
	for _, b := range slices.Backward(blocks) { // from the end, so that -update keeps the earlier lines where they are
		body := lines[b.start:b.end]
		if b.store == "" {
			for _, l := range body {
				if _, ok := commandArgs(strings.TrimPrefix(l, "$ ")); ok && strings.HasPrefix(l, "$ ") {
					t.Errorf("%s:%d: a records command in a console block without a <!-- records-output: STORE --> line: its output would go unchecked", readmePath, b.start)
					break
				}
			}
			continue
		}
		store, ok := readmeStores[b.store]
		if !ok {
			t.Errorf("%s:%d: records-output names the store %q; there are %v", readmePath, b.start-1, b.store, slices.Sorted(maps.Keys(readmeStores)))
			continue
		}
		run, built := runs[b.store]
		if !built {
			run = store.build(t, watchesOf(blocks, lines, b.store))
			runs[b.store] = run
		}
		var got []string
		code := 0
		for _, line := range commandLines(body) {
			var out string
			out, code, err = stepOutput(t, line, store.names, run, code)
			if err != nil {
				t.Errorf("%s:%d: %v", readmePath, b.start, err)
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
			t.Errorf("%s:%d: the block differs from what its commands print (go test -run TestREADME -update rewrites it):\n%s",
				readmePath, b.start, firstDiff(want, strings.Join(got, "\n")))
		}
	}
	if checked == 0 {
		t.Errorf("%s has no records-output block", readmePath)
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// watchesOf returns the records watch commands of the blocks on store:
// they run while the store is written.
func watchesOf(blocks []consoleBlock, lines []string, store string) [][]string {
	var watches [][]string
	for _, b := range blocks {
		if b.store != store {
			continue
		}
		for _, line := range commandLines(lines[b.start:b.end]) {
			if args, ok := commandArgs(line); ok && len(args) > 0 && args[0] == "watch" {
				watches = append(watches, args)
			}
		}
	}
	return watches
}

// stepOutput runs one command of a block and returns what it prints, with
// the store's directories under the names the README gives them, and its
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

// TestREADMECommandTable holds the README's table of commands to the
// command line: every command has a row, and every row names commands
// that exist.
func TestREADMECommandTable(t *testing.T) {
	raw, err := os.ReadFile(readmePath)
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
		t.Fatalf("%s has no table of commands (| command | what it says |)", readmePath)
	}
	named := regexp.MustCompile("`records ([a-z-]+)")
	for _, row := range rows {
		ms := named.FindAllStringSubmatch(row, -1)
		if len(ms) == 0 {
			t.Errorf("the README's row %q names no records command", row)
		}
		for _, m := range ms {
			if _, ok := commands[m[1]]; !ok {
				t.Errorf("the README's row %q names records %s, which is no command", row, m[1])
				continue
			}
			commands[m[1]] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(commands)) {
		if !commands[name] {
			t.Errorf("records %s is not in the README's table of commands", name)
		}
	}
}

// commandTable returns the first cells of the rows of the README's table
// of commands: the one whose header is | command | what it says |.
func commandTable(readme string) []string {
	var rows []string
	in := false
	for l := range strings.Lines(readme) {
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
