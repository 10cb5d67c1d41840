package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	recordkeys "github.com/otelrecords/otelrecords/internal/keys"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) diffCommand() *cobra.Command {
	var (
		asJSON  bool
		against string
		kind    string
		keys    []string
		ignore  []string
	)
	cmd := &cobra.Command{
		Use:   "diff --dir A --against B",
		Short: "Show what one store recorded that another did not",
		Long: `Compare what two stores recorded: the store A (--dir) and the store B
(--against), say a build machine's and a laptop's. Records are matched by
kind, name and key attributes: by default the attributes named "key" or
ending in ".key" (autotune.key), or those --key names. For each match the
newest record of each store is compared, attribute by attribute, and a
difference is shown:

  ~  recorded in both, with different attributes (a key tuned to a
     different winner: winner: tiled → simd)
  -  recorded only in A
  +  recorded only in B

The counts say how many records of the match each store holds. Wall times
and other timings are not compared; attributes that change from run to
run can be left out with --ignore.

With --json, one JSON object per difference and line: change ("changed",
"only_in_a" or "only_in_b"), kind, name, key (the key attributes), a and b
({count, attributes}) and differences ([{key, a, b}], a value or null where
that side has no such attribute). Both stores are only read.`,
		Example: `  records diff --dir ./ci-store --against ~/.cache/otelrecords/default
  records diff --dir A --against B --kind autotune --ignore tried
  records diff --dir A --against B --key kernel --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if against == "" {
				return usageError{errors.New("give the store to compare with, --against DIR")}
			}
			var kinds []string
			if kind != "" {
				k, err := recordkeys.CheckKind(kind)
				if err != nil {
					return usageError{fmt.Errorf("--kind %q: %w", kind, err)}
				}
				kinds = []string{k}
			}
			m := matcher{keys: keys, ignore: ignore}
			// B is read as A is, with every other flag the same.
			b := *a
			b.dir, b.dirFlag = against, "--against"
			var sides [2]*sideIndex
			for i, store := range []*app{a, &b} {
				err := store.read(cmd, func(r *sessions.Records) error {
					dir, _ := store.storeDir() // read has found it
					idx, err := m.index(r, dir, kinds)
					sides[i] = idx
					return err
				})
				if err != nil {
					return err
				}
			}
			return printDiff(cmd, sides[0], sides[1], compare(sides[0], sides[1]), asJSON)
		},
	}
	cmd.Flags().StringVar(&against, "against", "", "the other store's `directory` (B)")
	cmd.Flags().StringVar(&kind, "kind", "", "compare only records of this `kind`")
	cmd.Flags().StringArrayVar(&keys, "key", nil, "match records by this attribute (repeatable; default: key and *.key)")
	cmd.Flags().StringArrayVar(&ignore, "ignore", nil, "do not compare this attribute (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per difference, one per line")
	return cmd
}

// matcher says which attributes identify a record and which to compare.
type matcher struct {
	keys   []string // the key attributes; nil: "key" and "*.key"
	ignore []string // attributes left out of the comparison
}

func (m matcher) isKey(k string) bool {
	if m.keys != nil {
		return slices.Contains(m.keys, k)
	}
	return k == "key" || strings.HasSuffix(k, ".key")
}

// entry is what one store recorded under one match: how many records, and
// the newest one's key and compared attributes.
type entry struct {
	kind, name string
	key        sessions.Attrs // the key attributes
	attrs      sessions.Attrs // the compared ones
	count      int
}

// sideIndex is one store's records, by match.
type sideIndex struct {
	dir      string
	sessions int
	records  int
	entries  map[string]*entry // by identity()
}

// index reads the store's records of the kinds (every kind when nil) and
// keeps, per match, the count and the newest record: records come in stamp
// order, so a later one replaces an earlier one.
func (m matcher) index(r *sessions.Records, dir string, kinds []string) (*sideIndex, error) {
	idx := &sideIndex{dir: dir, entries: map[string]*entry{}}
	for _, err := range r.Sessions() {
		if err != nil {
			return nil, err
		}
		idx.sessions++
	}
	if kinds == nil {
		var err error
		if kinds, err = r.Kinds(); err != nil {
			return nil, err
		}
	}
	for _, kind := range kinds {
		for rec, err := range r.All(kind) {
			if err != nil {
				return nil, err
			}
			idx.records++
			var key, attrs sessions.Attrs
			for _, kv := range rec.Record.Attributes {
				switch {
				case m.isKey(kv.Key):
					key = append(key, kv)
				case !slices.Contains(m.ignore, kv.Key):
					attrs = append(attrs, kv)
				}
			}
			id := identity(kind, rec.Record.Name, key)
			e := idx.entries[id]
			if e == nil {
				e = &entry{kind: kind, name: rec.Record.Name, key: key}
				idx.entries[id] = e
			}
			e.count++
			e.attrs = attrs
		}
	}
	return idx, nil
}

// identity returns the match a record falls under, as a map key: its kind,
// name and key attributes, encoded so no two differ only in how they join.
func identity(kind, name string, key sessions.Attrs) string {
	b, _ := json.Marshal([]any{kind, name, key}) // strings and attribute values always encode
	return string(b)
}

// change is one difference between the stores.
type change struct {
	sign  byte // '~', '-' or '+'
	a, b  *entry
	diffs []attrDiff
}

func (c change) entry() *entry {
	if c.a != nil {
		return c.a
	}
	return c.b
}

// attrDiff is one attribute that differs; a nil side lacks it.
type attrDiff struct {
	key  string
	a, b *sessions.Value
}

// compare returns the differences between the stores, by kind, name and
// key.
func compare(a, b *sideIndex) []change {
	var changes []change
	for id, ea := range a.entries {
		eb, ok := b.entries[id]
		if !ok {
			changes = append(changes, change{sign: '-', a: ea})
			continue
		}
		if diffs := diffAttrs(ea.attrs, eb.attrs); len(diffs) > 0 {
			changes = append(changes, change{sign: '~', a: ea, b: eb, diffs: diffs})
		}
	}
	for id, eb := range b.entries {
		if _, ok := a.entries[id]; !ok {
			changes = append(changes, change{sign: '+', b: eb})
		}
	}
	slices.SortFunc(changes, func(x, y change) int {
		ex, ey := x.entry(), y.entry()
		if c := cmp.Compare(ex.kind, ey.kind); c != 0 {
			return c
		}
		if c := cmp.Compare(ex.name, ey.name); c != 0 {
			return c
		}
		if c := cmp.Compare(identity(ex.kind, ex.name, ex.key), identity(ey.kind, ey.name, ey.key)); c != 0 {
			return c
		}
		return cmp.Compare(x.sign, y.sign)
	})
	return changes
}

// diffAttrs returns the attributes whose values differ, in key order.
func diffAttrs(a, b sessions.Attrs) []attrDiff {
	var diffs []attrDiff
	keys := map[string]bool{}
	for _, kv := range a {
		keys[kv.Key] = true
	}
	for _, kv := range b {
		keys[kv.Key] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, ina := a.Get(k)
		vb, inb := b.Get(k)
		if ina && inb && va.Equal(vb) {
			continue
		}
		d := attrDiff{key: k}
		if ina {
			d.a = &va
		}
		if inb {
			d.b = &vb
		}
		diffs = append(diffs, d)
	}
	return diffs
}

// diffJSON is a difference as `records diff --json` prints it.
type diffJSON struct {
	Change      string         `json:"change"`
	Kind        string         `json:"kind"`
	Name        string         `json:"name"`
	Key         sessions.Attrs `json:"key"`
	A           sideJSON       `json:"a"`
	B           sideJSON       `json:"b"`
	Differences []attrDiffJSON `json:"differences"`
}

// sideJSON is what one store holds of a match; count 0 and attributes {}
// when it holds nothing.
type sideJSON struct {
	Count      int            `json:"count"`
	Attributes sessions.Attrs `json:"attributes"`
}

type attrDiffJSON struct {
	Key string          `json:"key"`
	A   *sessions.Value `json:"a"`
	B   *sessions.Value `json:"b"`
}

func sideOf(e *entry) sideJSON {
	if e == nil {
		return sideJSON{Attributes: sessions.Attrs{}}
	}
	return sideJSON{Count: e.count, Attributes: e.attrs}
}

func printDiff(cmd *cobra.Command, a, b *sideIndex, changes []change, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		names := map[byte]string{'~': "changed", '-': "only_in_a", '+': "only_in_b"}
		for _, c := range changes {
			e := c.entry()
			d := diffJSON{
				Change:      names[c.sign],
				Kind:        e.kind,
				Name:        e.name,
				Key:         e.key,
				A:           sideOf(c.a),
				B:           sideOf(c.b),
				Differences: make([]attrDiffJSON, len(c.diffs)),
			}
			for i, ad := range c.diffs {
				d.Differences[i] = attrDiffJSON{ad.key, ad.a, ad.b}
			}
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		return out.Flush()
	}

	for _, s := range []struct {
		name string
		idx  *sideIndex
	}{{"A", a}, {"B", b}} {
		if _, err := fmt.Fprintf(out, "%s  %s  %s, %s\n", s.name, clean(s.idx.dir),
			plural(s.idx.sessions, "session"), plural(s.idx.records, "record")); err != nil {
			return err
		}
	}
	if len(changes) == 0 {
		_, err := fmt.Fprintln(out, "\nno differences: both recorded the same kinds, names, keys and attributes")
		if err != nil {
			return err
		}
		return out.Flush()
	}
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	t := newTable(out)
	if err := t.row(" ", "KIND", "RECORD", "A", "B", "DIFFERENCE"); err != nil {
		return err
	}
	for _, c := range changes {
		e := c.entry()
		record := orDash(e.name)
		if len(e.key) > 0 {
			record += " " + formatAttrs(e.key)
		}
		var what string
		switch c.sign {
		case '-':
			what = "only in A"
		case '+':
			what = "only in B"
		default:
			parts := make([]string, len(c.diffs))
			for i, d := range c.diffs {
				parts[i] = clean(d.key) + ": " + formatSide(d.a) + " → " + formatSide(d.b)
			}
			what = strings.Join(parts, ", ")
		}
		if err := t.row(string(c.sign), e.kind, record, countOf(c.a), countOf(c.b), what); err != nil {
			return err
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return out.Flush()
}

func formatSide(v *sessions.Value) string {
	if v == nil {
		return "(none)"
	}
	return formatValue(*v)
}

func countOf(e *entry) string {
	if e == nil {
		return "0"
	}
	return strconv.Itoa(e.count)
}

// plural formats n things, as "1 session" or "2 sessions".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
