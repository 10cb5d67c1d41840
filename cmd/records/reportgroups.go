package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// Report limits for a session with many roots (a server's, a root per
// request): more than a screenful of bars one below another reads as
// noise.
const (
	// reportScreenRoots is how many roots a session may have before the
	// timeline groups them: about what a screen shows, one row each.
	reportScreenRoots = 40
	// reportExpandRoots is how many of the slowest roots a grouped
	// timeline still draws whole, with the records inside them.
	reportExpandRoots = 5
	// reportMaxGroups is how many groups the timeline draws, a row each,
	// and the table lists: those with the most time.
	reportMaxGroups = 20
	// reportGroupShare is how many roots a group must have on average
	// for the roots to be grouped.
	reportGroupShare = 4
	// tlGroupBarY is where a group's bars start below its row's top: the
	// row's name is written above them.
	tlGroupBarY = 12.0
)

// reportGroup is a group of roots that share a kind and a name, as the
// page's table lists it.
type reportGroup struct {
	key              explain.GroupKey
	Kind, Name       string
	Class            string
	Count            int
	Median, P90, Max dur
	Slowest          uint64 // the seq of its slowest root
}

// reportGroupLabel names a group's row of the timeline.
type reportGroupLabel struct {
	X, Y  string
	Label string
}

// groupRoots groups the session's roots by kind and name when there are
// more than reportScreenRoots, and their names repeat (a group per
// reportGroupShare roots at most; else the timeline draws them as any
// records, the longest when there are too many): the page lists the groups, the timeline
// draws the slowest reportExpandRoots roots whole (and the root the
// critical path starts from), and each group's other roots on one row of
// its own, those that overlap or touch, at least a bar's least width
// each, merged into one bar. It returns the seqs of the roots drawn
// whole, nil when the roots are not grouped, and narrows drawn to the
// records inside them.
func groupRoots(page *reportPage, r *sessions.Records, tree *explain.SessionTree, path []explain.Step, classes map[string]string, drawn map[uint64]bool) (map[uint64]bool, error) {
	roots := 0
	for range tree.Roots() {
		roots++
	}
	if roots <= reportScreenRoots {
		return nil, nil
	}
	groups := tree.RootGroups()
	if len(groups)*reportGroupShare > roots {
		return nil, nil // names that do not repeat group nothing
	}
	expanded := map[uint64]bool{}
	for _, seq := range tree.SlowestRoots(reportExpandRoots) {
		expanded[seq] = true
	}
	if len(path) > 0 {
		expanded[path[0].Seq] = true // pre-order: the path's root
	}
	var root uint64
	for n := range tree.Walk() {
		if n.Depth == 0 {
			root = n.Seq
		}
		if !expanded[root] {
			delete(drawn, n.Seq)
		}
	}
	page.Timeline.GroupedRoots = roots - len(expanded)
	page.Timeline.Groups = plural(len(groups), "group")
	if len(groups) > reportMaxGroups {
		page.Timeline.Groups += fmt.Sprintf(", the %d with the most time", reportMaxGroups)
	}
	for _, g := range groups[:min(len(groups), reportMaxGroups)] {
		name, err := groupName(r, tree, g)
		if err != nil {
			return nil, err
		}
		page.Groups = append(page.Groups, reportGroup{
			key: g.Key, Kind: clean(g.Kind), Name: clean(name), Class: classes[g.Kind], Count: g.Count,
			Median: dur(g.Median), P90: dur(g.P90), Max: dur(g.Max), Slowest: g.Slowest,
		})
	}
	return expanded, nil
}

// drawGroups draws, below the rows taken, a row per group of the roots
// not drawn whole: their stretches of time, a bar's least width each,
// merged where they overlap or lie closer than a bar's least width (a gap
// no one could see, which would only split the row into bars by chance of
// timing), and the group's name over the row.
// minWidth is the least width in time.
func drawGroups(page *reportPage, tree *explain.SessionTree, expanded map[uint64]bool, rows int, minWidth time.Duration, scale float64) {
	tl := &page.Timeline
	row := map[explain.GroupKey]int{}
	for i, g := range page.Groups {
		row[g.key] = i
	}
	stretches := make([][]interval, len(page.Groups))
	counts := make([][]int, len(page.Groups))
	for n := range tree.Roots() {
		i, ok := row[tree.GroupKey(n)]
		if !ok || expanded[n.Seq] {
			continue
		}
		stretches[i] = append(stretches[i], interval{n.Offset, n.Offset + max(n.Wall, minWidth)})
	}
	for i, g := range page.Groups {
		ivs := stretches[i]
		slices.SortFunc(ivs, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
		merged := ivs[:0]
		counts[i] = counts[i][:0]
		for _, iv := range ivs {
			if k := len(merged) - 1; k >= 0 && iv.start <= merged[k].end+minWidth {
				merged[k].end = max(merged[k].end, iv.end)
				counts[i][k]++
				continue
			}
			merged = append(merged, iv)
			counts[i] = append(counts[i], 1)
		}
		y := tlAxis + float64(rows+i)*tlRow
		for k, iv := range merged {
			x, w := float64(iv.start)*scale, max(float64(iv.end-iv.start)*scale, tlMinBar)
			tl.Bars = append(tl.Bars, reportBar{
				X: svgNum(x), Y: svgNum(y + tlGroupBarY), W: svgNum(w), H: svgNum(tlBar - tlGroupBarY),
				Class: g.Class + " group",
				Details: fmt.Sprintf("%s\n%s · %d roots grouped: median %s, p90 %s, max %s\nthis bar: %s from %s to %s",
					orDash(g.Name), g.Kind, g.Count, g.Median, g.P90, g.Max,
					plural(counts[i][k], "root"), formatDuration(iv.start), formatDuration(iv.end)),
				Seq: g.Slowest,
			})
		}
		tl.GroupLabels = append(tl.GroupLabels, reportGroupLabel{
			X: "4", Y: svgNum(y + tlGroupBarY - 2), // above its bars
			Label: fmt.Sprintf("%s ×%d · median %s · p90 %s · max %s", truncate(g.Name, 60), g.Count, g.Median, g.P90, g.Max),
		})
	}
	tl.Height = tlAxis + float64(rows+len(page.Groups))*tlRow
}
