package layout

import (
	"bufio"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documents are read by people who follow their links and their
// section numbers, in the Markdown and in the code's comments and
// messages ("docs/FORMAT.md §7"). The tests below keep every such pointer
// landing somewhere: a relative link on a file (and a heading, when it
// names one), a section number on a numbered heading of the document it
// names, a test a document names on a test of the repository.

// root is the repository's root, from this package's directory.
const root = "../../.."

// repoFiles returns the repository's files whose names end in ext,
// relative to root, leaving out the git directory and installed
// JavaScript packages.
func repoFiles(t *testing.T, ext string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ext) {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// markdown is a document: its lines, and the headings it holds.
type markdown struct {
	path  string
	lines []string
	// slugs are the anchors of its headings, as GitHub makes them.
	slugs map[string]bool
	// headings are its headings' text, and numbers the section numbers
	// of the numbered ones ("7", "8.4").
	headings []string
	numbers  map[string]bool
}

// numbered is a heading that starts with a section number: "## 8.",
// "### 8.4 ...".
var numbered = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?(?:\s|$)`)

// readDocs reads every Markdown document of the repository, by its path
// from the root.
func readDocs(t *testing.T) map[string]*markdown {
	t.Helper()
	docs := map[string]*markdown{}
	for _, path := range repoFiles(t, ".md") {
		raw, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		d := &markdown{path: path, lines: strings.Split(string(raw), "\n"), slugs: map[string]bool{}, numbers: map[string]bool{}}
		seen := map[string]int{}
		for _, l := range proseLines(d.lines) {
			text, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
			if !strings.HasPrefix(l, "#") || !ok {
				continue
			}
			d.headings = append(d.headings, text)
			slug := slugOf(text)
			if n := seen[slug]; n > 0 {
				d.slugs[slug+"-"+strconv.Itoa(n)] = true
			} else {
				d.slugs[slug] = true
			}
			seen[slug]++
			if m := numbered.FindStringSubmatch(text); m != nil {
				d.numbers[m[1]] = true
			}
		}
		docs[path] = d
	}
	return docs
}

// proseLines returns the lines of a document outside its fenced code
// blocks, blank in their place, so that line numbers still count.
func proseLines(lines []string) []string {
	out := make([]string, len(lines))
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out[i] = l
		}
	}
	return out
}

// slugOf is the anchor GitHub gives a heading: lower case, letters,
// digits, '-' and '_' kept, spaces made '-', everything else dropped.
func slugOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// docNamed returns the document a name points to: a path from the root
// ("docs/FORMAT.md"), or a file name the repository holds once
// ("FORMAT.md").
func docNamed(docs map[string]*markdown, name string) (*markdown, bool) {
	if d, ok := docs[name]; ok {
		return d, true
	}
	var found *markdown
	for path, d := range docs {
		if filepath.Base(path) == filepath.Base(name) {
			if found != nil {
				return nil, false
			}
			found = d
		}
	}
	return found, found != nil
}

var (
	// link is a Markdown link or image: [text](target).
	link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	// inlineCode is a code span, whose text is no link.
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// TestDocLinksResolve follows every relative link of every document: the
// file must be there, and a heading of it (of the document itself, for
// "#anchor") must have the anchor the link names.
func TestDocLinksResolve(t *testing.T) {
	docs := readDocs(t)
	checked := 0
	for _, path := range slices.Sorted(maps.Keys(docs)) {
		d := docs[path]
		for i, l := range proseLines(d.lines) {
			for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				to := d
				if file != "" {
					rel := filepath.ToSlash(filepath.Join(filepath.Dir(path), file))
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						t.Errorf("%s:%d: the link %s leads to nothing: %v", path, i+1, target, err)
						continue
					}
					if to = docs[rel]; to == nil {
						if anchor != "" {
							t.Errorf("%s:%d: the link %s names an anchor in a file that is not a document", path, i+1, target)
						}
						continue
					}
				}
				if anchor != "" && !to.slugs[anchor] {
					t.Errorf("%s:%d: the link %s names no heading of %s (its anchors: %v)", path, i+1, target, to.path, slices.Sorted(maps.Keys(to.slugs)))
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link in any document: the test would check nothing")
	}
}

var (
	// sectionRef names numbered sections of a document: "FORMAT.md §7",
	// "RELIABILITY.md §7 and §8", "docs/MAPPING.md §6, §7".
	sectionRef = regexp.MustCompile(`((?:[\w-]+/)*[\w-]+\.md)((?:,? (?:and |or )?§\d+(?:\.\d+)*)+)`)
	// sectionWords names one in words: "FORMAT.md, section 10",
	// "FORMAT.md (section 10)".
	sectionWords = regexp.MustCompile(`((?:[\w-]+/)*[\w-]+\.md),? \(?sections? (\d+(?:\.\d+)*)`)
	// headingRef names a section by its title: `FORMAT.md, "Decode limits"`.
	headingRef = regexp.MustCompile(`((?:[\w-]+/)*[\w-]+\.md), "([^"]+)"`)
	// figureRef names a figure of BENCHMARKS.md: "BENCHMARKS.md, figure 5".
	figureRef = regexp.MustCompile(`(BENCHMARKS\.md),? figures? (\d+)`)
	// issueRef names a round of the changelog: "CHANGELOG.md, issue 35".
	issueRef = regexp.MustCompile(`((?:[\w-]+/)*[\w-]+\.md),? issue (\d+)`)
	// ownSection is a section of the document a line is in: "(section
	// 3.5)", "(§3.3)", "sections 1-6".
	ownSection = regexp.MustCompile(`(?:^|[^\w.])(?:sections? |§)(\d+(?:\.\d+)*)(?:-(\d+))?`)
	// docMention is a document named by its file.
	docMention = regexp.MustCompile(`(?:^|[^\w/.-])((?:[\w-]+/)*[A-Z][A-Z_]*\.md)\b`)
	// sectionNumber is one "§N" of a list.
	sectionNumber = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)
)

// TestDocSectionReferencesResolve checks every pointer into a document,
// in the documents and in the Go code's comments and messages: a document
// named must exist, a section number must be a numbered heading of it, a
// section named by its title a heading, a figure of BENCHMARKS.md a line
// of its tables, an issue of the changelog one of its headings. In a
// document, "section N" and "§N" alone point into the document itself.
func TestDocSectionReferencesResolve(t *testing.T) {
	docs := readDocs(t)
	check := func(where, text string, self *markdown) {
		for _, m := range docMention.FindAllStringSubmatch(text, -1) {
			if _, ok := docNamed(docs, m[1]); !ok {
				t.Errorf("%s: names %s, which is no document of the repository (or names one of several)", where, m[1])
			}
		}
		named := func(name string) *markdown {
			d, ok := docNamed(docs, name)
			if !ok {
				return nil // reported above
			}
			return d
		}
		for _, m := range sectionRef.FindAllStringSubmatch(text, -1) {
			if d := named(m[1]); d != nil {
				for _, n := range sectionNumber.FindAllStringSubmatch(m[2], -1) {
					if !d.numbers[n[1]] {
						t.Errorf("%s: %s §%s: %s has no section %s", where, m[1], n[1], d.path, n[1])
					}
				}
			}
		}
		for _, m := range sectionWords.FindAllStringSubmatch(text, -1) {
			if d := named(m[1]); d != nil && !d.numbers[m[2]] {
				t.Errorf("%s: %s, section %s: %s has no section %s", where, m[1], m[2], d.path, m[2])
			}
		}
		for _, m := range headingRef.FindAllStringSubmatch(text, -1) {
			if d := named(m[1]); d != nil && !slices.ContainsFunc(d.headings, func(h string) bool { return strings.Contains(h, m[2]) }) {
				t.Errorf("%s: %s, %q: %s has no such heading", where, m[1], m[2], d.path)
			}
		}
		for _, m := range figureRef.FindAllStringSubmatch(text, -1) {
			if d := named(m[1]); d != nil && !slices.ContainsFunc(d.lines, func(l string) bool { return strings.HasPrefix(l, "| "+m[2]+" ") }) {
				t.Errorf("%s: %s, figure %s: no line of %s's tables is figure %s", where, m[1], m[2], d.path, m[2])
			}
		}
		for _, m := range issueRef.FindAllStringSubmatch(text, -1) {
			n, _ := strconv.Atoi(m[2])
			if d := named(m[1]); d != nil && !slices.ContainsFunc(d.headings, func(h string) bool { return headingCoversIssue(h, n) }) {
				t.Errorf("%s: %s, issue %d: no heading of %s is issue %d", where, m[1], n, d.path, n)
			}
		}
		if self == nil {
			return
		}
		// What is left after the references to other documents points
		// into this one.
		rest := sectionRef.ReplaceAllString(sectionWords.ReplaceAllString(text, ""), "")
		for _, at := range ownSection.FindAllStringSubmatchIndex(rest, -1) {
			m := []string{"", rest[at[2]:at[3]], ""}
			if at[4] >= 0 {
				m[2] = rest[at[4]:at[5]]
			}
			// "§" after a word or a number is another text's section
			// (SPEC §8, RFC 8949 §4.2.1), not this document's.
			before := strings.TrimRight(rest[:at[2]], "§ ")
			if strings.Contains(rest[at[0]:at[2]], "§") && before != "" && isWordEnd(before) {
				continue
			}
			for _, n := range m[1:] {
				if n != "" && !self.numbers[n] {
					t.Errorf("%s: section %s: %s has no section %s", where, n, self.path, n)
				}
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(docs)) {
		d := docs[path]
		self := d
		if len(d.numbers) == 0 {
			self = nil // a document without numbered sections means others' by "section N"
		}
		// A reference may wrap: each paragraph (or table) is read whole.
		lines := proseLines(d.lines)
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "" {
				continue
			}
			start := i
			var para []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				para = append(para, strings.TrimSpace(lines[i]))
			}
			check(path+":"+strconv.Itoa(start+1), strings.Join(para, " "), self)
		}
	}
	for _, path := range repoFiles(t, ".go") {
		f, err := os.Open(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		// A reference may wrap onto the next line of a comment: each
		// line is read with the start of the next.
		var lines []string
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		for i, l := range lines {
			if !strings.Contains(l, ".md") {
				continue
			}
			if i+1 < len(lines) {
				l += " " + strings.TrimLeft(strings.TrimSpace(lines[i+1]), "/ ")
			}
			check(path+":"+strconv.Itoa(i+1), l, nil)
		}
	}
}

// isWordEnd reports whether text ends in a letter or a digit.
func isWordEnd(text string) bool {
	r := []rune(text)
	last := r[len(r)-1]
	return unicode.IsLetter(last) || unicode.IsDigit(last)
}

// headingCoversIssue reports whether a changelog heading is issue n's:
// "Issue 35 — ..." or "Issues 9-13 — ...".
func headingCoversIssue(h string, n int) bool {
	m := regexp.MustCompile(`^Issues? (\d+)(?:-(\d+))?\b`).FindStringSubmatch(h)
	if m == nil {
		return false
	}
	lo, _ := strconv.Atoi(m[1])
	hi := lo
	if m[2] != "" {
		hi, _ = strconv.Atoi(m[2])
	}
	return lo <= n && n <= hi
}

// testName is a test, benchmark or fuzz target named on its own in code
// text: `TestKilledWriterLosesNothingAcknowledged`.
var testName = regexp.MustCompile("`((?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*)`")

// TestDocsNameTestsThatExist holds the documents to the tests they cite
// as proof (RELIABILITY.md names one for every guarantee): each is a
// function of a _test.go file of the repository.
func TestDocsNameTestsThatExist(t *testing.T) {
	funcs := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w+)\(`)
	for _, path := range repoFiles(t, "_test.go") {
		raw, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(raw), -1) {
			funcs[m[1]] = true
		}
	}
	docs := readDocs(t)
	named := 0
	for _, path := range slices.Sorted(maps.Keys(docs)) {
		for i, l := range docs[path].lines {
			for _, m := range testName.FindAllStringSubmatch(l, -1) {
				named++
				if !funcs[m[1]] {
					t.Errorf("%s:%d: names %s, which no _test.go file declares", path, i+1, m[1])
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no document names a test: the test would check nothing")
	}
}

// TestREADMEDocumentsEveryVariable checks that the README names every
// OTELRECORDS_ variable the code a user runs reads (the library, the
// command, the Collector component; not the tests' own knobs, which
// RELIABILITY.md and BENCHMARKS.md give with their commands), and that
// it stays a page a newcomer reads: at most 300 lines.
func TestREADMEDocumentsEveryVariable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	if n := strings.Count(readme, "\n"); n > 300 {
		t.Errorf("README.md has %d lines; at most 300: move the detail to docs/", n)
	}
	variable := regexp.MustCompile(`OTELRECORDS_[A-Z_]*[A-Z]`)
	found := 0
	for _, path := range repoFiles(t, ".go") {
		if strings.HasSuffix(path, "_test.go") || testCode(path) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range variable.FindAllString(string(raw), -1) {
			found++
			if !strings.Contains(readme, v) {
				t.Errorf("%s reads %s; the README does not name it", path, v)
			}
		}
	}
	if found == 0 {
		t.Fatal("no OTELRECORDS_ variable in the code: the test would check nothing")
	}
}

// testCode reports whether a file is a test kit's rather than code a user
// runs: under a testkit directory or one whose name ends in "test".
func testCode(path string) bool {
	for _, dir := range strings.Split(filepath.ToSlash(filepath.Dir(path)), "/") {
		if dir == "testkit" || dir == "testdata" || strings.HasSuffix(dir, "test") {
			return true
		}
	}
	return false
}
