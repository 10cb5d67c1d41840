package summary

import "github.com/otelrecords/otelrecords/explain"

// How a session of many roots (a server's, a root per request) is summed
// up: more than a screenful of roots one below another reads as noise.
const (
	// ScreenRoots is how many roots a session may have before they are
	// grouped: about what a screen shows, one line each.
	ScreenRoots = 40
	// ExpandRoots is how many of the slowest roots a grouped session
	// still shows whole, with the records inside them.
	ExpandRoots = 5
	// GroupShare is how many roots a group must have on average for the
	// roots to be grouped: names that do not repeat group nothing.
	GroupShare = 4
)

// Grouping is a session's roots summed up by kind and name.
type Grouping struct {
	// Roots is how many roots the session has.
	Roots int
	// Groups are its roots by kind and name, the most time first
	// (explain's RootGroups).
	Groups []explain.RootGroup
	// Slowest are the seqs of its ExpandRoots slowest roots, slowest
	// first, which are shown whole.
	Slowest []uint64
}

// GroupRoots returns how the roots of t are summed up, or nil when they are
// shown each: ScreenRoots of them or fewer, or names that repeat too
// little (fewer than GroupShare roots a group on average).
func GroupRoots(t *explain.SessionTree) *Grouping {
	roots := 0
	for range t.Roots() {
		roots++
	}
	if roots <= ScreenRoots {
		return nil
	}
	groups := t.RootGroups()
	if len(groups)*GroupShare > roots {
		return nil
	}
	return &Grouping{Roots: roots, Groups: groups, Slowest: t.SlowestRoots(ExpandRoots)}
}
