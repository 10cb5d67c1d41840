package main

import (
	"bufio"
	"fmt"
	"github.com/otelrecords/otelrecords/internal/keys"
	"maps"
	"slices"
	"strconv"
	"strings"

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
offset, name and wall time, then one column per attribute key any of them
has, in key order ("-" where a record has none).

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
// columns are every attribute key the shown records have, which are known
// only once they have all been read: so it reads them twice, once for the
// keys and once to print, rather than hold them.
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

	keySet := map[string]bool{}
	for rec, err := range r.All(kind, opts...) {
		if err != nil {
			return err
		}
		if matches(rec.Record, filters) {
			for _, kv := range rec.Record.Attributes {
				keySet[kv.Key] = true
			}
		}
	}
	keys := slices.Sorted(maps.Keys(keySet))

	t := newTable(out)
	header := append([]string{"SESSION", "SEQ", "OFFSET", "NAME", "WALL"}, keys...)
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
			rec.Stamp.Offset.String(),
			orDash(rec.Record.Name),
			rec.Record.Wall.String(),
		}
		for _, k := range keys {
			cell := "-"
			if v, ok := rec.Record.Attributes.Get(k); ok {
				cell = formatValue(v)
			}
			cells = append(cells, cell)
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
