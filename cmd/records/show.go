package main

import (
	"bufio"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/otelrecords/otelrecords/internal/ground/keys"

	"github.com/spf13/cobra"

	"github.com/otelrecords/otelrecords/sessions"
)

func (a *app) showCommand() *cobra.Command {
	var (
		asJSON  bool
		where   []string
		session sessionFlag
	)
	cmd := &cobra.Command{
		Use:   "show KIND",
		Short: "Show one kind's records as a table, attributes as columns",
		Long: `Show the records of one kind in stamp order as a table: session, seq,
offset, name, wall time and effect (changed, observed, or "-" for records
that do not say), then a column per attribute key, in key order
("-" where a record has none). An attribute gets a column when at least one
shown record in 10 has it, and only the 16 most common do; the others are
printed as key=value in a last column, OTHER.

--where key=value keeps the records whose attribute key has that value, as
the table prints it (2, true, 1.5, matmul); a list matches when one of its
elements does. Several --where must all hold.

With --json, one JSON object per record and line, as records dump --json
prints them (docs/FORMAT.md).`,
		Example: `  records show autotune
  records show autotune --where autotune.key=matmul_1024 --where winner=tiled
  records show compile --session 1735787045006000000 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			session.parse(cmd)
			kind, err := keys.CheckKind(args[0])
			if err != nil {
				return usageError{fmt.Errorf("kind %q: %w", args[0], err)}
			}
			filters, err := parseWhere(where)
			if err != nil {
				return err
			}
			return a.read(cmd, func(r *sessions.Records) error {
				if err := needKind(r, kind); err != nil {
					return err
				}
				return show(cmd, r, kind, filters, session.readOptions(), asJSON)
			})
		},
	}
	session.register(cmd, "show only the records of the session with this `id`")
	cmd.Flags().StringArrayVar(&where, "where", nil, "keep records whose attribute has this value, as `key=value` (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per record, one per line")
	return cmd
}

// filter is one --where: an attribute and the value it must have.
type filter struct{ key, value string }

func parseWhere(where []string) ([]filter, error) {
	filters := make([]filter, len(where))
	for i, w := range where {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--where %q: want key=value", w)}
		}
		filters[i] = filter{k, v}
	}
	return filters, nil
}

// matches reports whether the record has every filtered attribute with its
// value, compared as text as the table prints it (unquoted).
func matches(rec sessions.Record, filters []filter) bool {
	for _, f := range filters {
		v, ok := rec.Attributes.Get(f.key)
		if !ok || !valueIs(v, f.value) {
			return false
		}
	}
	return true
}

func valueIs(v sessions.Value, want string) bool {
	switch x := v.Any().(type) {
	case []string:
		return slices.Contains(x, want)
	case []bool, []int64, []float64:
		// Formatted as "[a b c]": match an element.
		return slices.Contains(strings.Fields(strings.Trim(formatValue(v), "[]")), want)
	}
	return v.String() == want
}

// show prints the records of one kind that pass the filters. The table's
// columns are the attribute keys common among the shown records (see
// showColumns), which are known only once they have all been read: so it
// reads them twice, once for the keys and once to print, rather than hold
// them.
func show(cmd *cobra.Command, r *sessions.Records, kind string, filters []filter, opts []sessions.ReadOption, asJSON bool) error {
	out := bufio.NewWriter(cmd.OutOrStdout())
	if asJSON {
		enc := jsonLines(out)
		for rec, err := range r.All(kind, opts...) {
			if err != nil {
				out.Flush()
				return err
			}
			if matches(rec.Record, filters) {
				if err := enc.Encode(toJSON(kindRecord{Kind: kind, Stamped: rec})); err != nil {
					return err
				}
			}
		}
		return out.Flush()
	}

	// Which attributes get a column: the most common, within bounds.
	present := map[string]int{}
	shown := 0
	for rec, err := range r.All(kind, opts...) {
		if err != nil {
			return err
		}
		if matches(rec.Record, filters) {
			shown++
			for _, kv := range rec.Record.Attributes {
				present[kv.Key]++
			}
		}
	}
	columns, rest := showColumns(present, shown)

	t := newTable(out)
	header := append([]string{"SESSION", "SEQ", "OFFSET", "NAME", "WALL", "EFFECT"}, columns...)
	if rest {
		header = append(header, "OTHER")
	}
	if err := t.row(header...); err != nil {
		return err
	}
	n := 0
	for rec, err := range r.All(kind, opts...) {
		if err != nil {
			t.flush()
			out.Flush()
			return err
		}
		if !matches(rec.Record, filters) {
			continue
		}
		cells := []string{
			rec.Stamp.Session.String(),
			strconv.FormatUint(rec.Stamp.Seq, 10),
			formatDuration(rec.Stamp.Offset),
			orDash(rec.Record.Name),
			formatDuration(rec.Record.Wall),
			effectCell(&rec.Record),
		}
		for _, k := range columns {
			cell := "-"
			if v, ok := rec.Record.Attributes.Get(k); ok {
				cell = formatValue(v)
			}
			cells = append(cells, cell)
		}
		if rest {
			var other sessions.Attrs
			for _, kv := range rec.Record.Attributes {
				if _, ok := slices.BinarySearch(columns, kv.Key); !ok {
					other = append(other, kv)
				}
			}
			cells = append(cells, orDash(formatAttrs(other)))
		}
		if err := t.row(cells...); err != nil {
			return err
		}
		// Keep a long table's memory bounded, as dump does; columns may
		// shift a little from one block to the next.
		if n++; n%dumpFlushEvery == 0 {
			if err := t.flush(); err != nil {
				return err
			}
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	return out.Flush()
}

// How show chooses its columns: an attribute gets a column of its own when
// at least one shown record in showColumnShare has it, and only the
// showColumnsMax most common do; the others are printed as key=value in a
// last column, OTHER. A kind whose every record has keys of its own (a
// request id as the key, say) would otherwise print a column per record:
// 5,000 records, 133 MB of dashes.
const (
	showColumnShare = 10
	showColumnsMax  = 16
)

// showColumns returns the attribute keys that get a column, in key order,
// given how many of the shown records have each, and whether some
// attribute is left for OTHER.
func showColumns(present map[string]int, shown int) (columns []string, rest bool) {
	for k, n := range present {
		if n*showColumnShare >= shown {
			columns = append(columns, k)
		} else {
			rest = true
		}
	}
	if len(columns) > showColumnsMax {
		// The most common, the first in key order among equals.
		slices.SortFunc(columns, func(a, b string) int {
			return cmp.Or(cmp.Compare(present[b], present[a]), strings.Compare(a, b))
		})
		columns, rest = columns[:showColumnsMax], true
	}
	slices.Sort(columns)
	return columns, rest
}
