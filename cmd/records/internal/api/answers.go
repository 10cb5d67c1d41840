package api

import (
	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/explain/summary"
	"github.com/otelrecords/otelrecords/explain/tallied"
	"github.com/otelrecords/otelrecords/sessions"
)

// Summary is a session as records summary --json prints it.
type Summary struct {
	ID            sessions.SessionID   `json:"id,string"`
	StartedUnixMs int64                `json:"started_unix_ms"`
	Label         string               `json:"label"`
	Process       int                  `json:"process"`
	DurationNs    int64                `json:"duration_ns"`
	Records       map[string]KindTotal `json:"records"`
	Slowest       []Slow               `json:"slowest"`
	CriticalPath  Path                 `json:"critical_path"`
	// Hits are the hit rates of its kinds with a hit, kept and tallied;
	// Tallied false for a session without a tally (hits of kept records
	// only).
	Hits    map[string]KindHits `json:"hits"`
	Tallied bool                `json:"tallied"`
}

// KindHits is a kind's hit rate in a session: hits (kept and tallied),
// how many of them were tallied (let go, counted, not kept) and their
// time, and misses (kept records that were not hits).
type KindHits struct {
	Hits      int64 `json:"hits"`
	Tallied   int64 `json:"tallied"`
	TalliedNs int64 `json:"tallied_ns"`
	Misses    int64 `json:"misses"`
}

// Path is a session's critical path: the root it starts from (null for a
// session with no records), and the seqs on it in pre-order.
type Path struct {
	RootSeq *uint64  `json:"root_seq"`
	Seqs    []uint64 `json:"seqs"`
}

// KindTotal is one kind's share of a session: how many records, and how
// long at least one of them was open (time counted once).
type KindTotal struct {
	Count  int   `json:"count"`
	WallNs int64 `json:"wall_ns"`
}

// Slow is one of a session's slowest records.
type Slow struct {
	Kind     string `json:"kind"`
	Seq      uint64 `json:"seq"`
	OffsetNs int64  `json:"offset_ns"`
	Name     string `json:"name"`
	WallNs   int64  `json:"wall_ns"`
}

// NewSummary returns a session summed up.
func NewSummary(s *summary.Session) Summary {
	slow := make([]Slow, len(s.Slowest))
	for i, kr := range s.Slowest {
		slow[i] = Slow{kr.Kind, kr.Stamp.Seq, int64(kr.Stamp.Offset), kr.Record.Name, int64(kr.Record.Wall)}
	}
	kinds := make(map[string]KindTotal, len(s.Summary.Kinds))
	for _, k := range s.Summary.Kinds {
		kinds[k.Kind] = KindTotal{k.Records, int64(k.Wall)}
	}
	hits := make(map[string]KindHits, len(s.Hits))
	for _, k := range s.Hits {
		hits[k.Kind] = KindHits{k.Hits, k.Tallied, int64(k.TalliedWall), k.Misses}
	}
	path := Path{Seqs: make([]uint64, len(s.Path))}
	for i, st := range s.Path {
		path.Seqs[i] = st.Seq
	}
	if len(s.Path) > 0 {
		path.RootSeq = &path.Seqs[0] // pre-order: the root comes first
	}
	return Summary{
		ID:            s.ID,
		StartedUnixMs: s.StartedUnixMs,
		Label:         s.Label,
		Process:       s.Process,
		DurationNs:    int64(s.Summary.End),
		Records:       kinds,
		Slowest:       slow,
		CriticalPath:  path,
		Hits:          hits,
		Tallied:       s.Tallied,
	}
}

// TimelineRecord is a record as records timeline --json prints it: where
// it hangs in its session's tree.
type TimelineRecord struct {
	Session   sessions.SessionID `json:"session,string"`
	Seq       uint64             `json:"seq"`
	ParentSeq *uint64            `json:"parent_seq"`
	Depth     int                `json:"depth"`
	Kind      string             `json:"kind"`
	Name      string             `json:"name"`
	OffsetNs  int64              `json:"offset_ns"`
	WallNs    int64              `json:"wall_ns"`
	Effect    *string            `json:"effect"`
}

// NewTimelineRecord returns a record placed in its session's tree.
func NewTimelineRecord(kr sessions.KindRecord, p explain.Placement) TimelineRecord {
	j := TimelineRecord{
		Session:  kr.Stamp.Session,
		Seq:      kr.Stamp.Seq,
		Depth:    p.Depth,
		Kind:     kr.Kind,
		Name:     kr.Record.Name,
		OffsetNs: int64(kr.Stamp.Offset),
		WallNs:   int64(kr.Record.Wall),
		Effect:   Effect(&kr.Record),
	}
	if p.Depth > 0 {
		j.ParentSeq = &p.ParentSeq
	}
	return j
}

// ChildCost is a row of records cost --json's table "children"
// (FORMAT.md §8.4).
type ChildCost struct {
	Table            string `json:"table"`
	Parent           string `json:"parent"`
	Child            string `json:"child"`
	Parents          int    `json:"parents"`
	Children         int    `json:"children"`
	WallNs           int64  `json:"wall_ns"`
	ChangedNothingNs *int64 `json:"changed_nothing_ns"`
}

// NewChildCost returns a row of the table "children".
func NewChildCost(c explain.ChildWork) ChildCost {
	j := ChildCost{"children", c.Parent, c.Child, c.Parents, c.Children, int64(c.Wall), nil}
	if c.UnchangedKnown {
		n := int64(c.Unchanged)
		j.ChangedNothingNs = &n
	}
	return j
}

// Redone is a row of records cost --json's table "redone" (FORMAT.md
// §8.4).
type Redone struct {
	Table    string         `json:"table"`
	Kind     string         `json:"kind"`
	Name     string         `json:"name"`
	Key      sessions.Attrs `json:"key"`
	Records  int            `json:"records"`
	Sessions int            `json:"sessions"`
	WallNs   int64          `json:"wall_ns"`
	Redone   int            `json:"redone"`
	RedoneNs int64          `json:"redone_ns"`
	Raced    int            `json:"raced"`
	RacedNs  int64          `json:"raced_ns"`
	NewHere  int            `json:"new_here"`
	Hits     int            `json:"hits"`
	HitNs    int64          `json:"hit_ns"`
	// Tallied of Hits (and TalliedNs of HitNs) are tallied hits: let go,
	// counted, not kept.
	Tallied   int   `json:"tallied"`
	TalliedNs int64 `json:"tallied_ns"`
	Misses    int   `json:"misses"`
}

// NewRedone returns a row of the table "redone".
func NewRedone(k explain.KeyWork) Redone {
	key := k.Key
	if key == nil {
		key = sessions.Attrs{}
	}
	return Redone{"redone", k.Kind, k.Name, key, k.Records, k.Sessions, int64(k.Wall),
		k.Redos, int64(k.Redone), k.Raced, int64(k.RacedWall), k.NewHere, k.Hits, int64(k.HitWall), k.Tallied, int64(k.TalliedWall), k.Misses}
}

// Tallies is the last row of records cost --json, table "tallies" (Tally)
// (FORMAT.md §8.4).
type Tallies struct {
	Table string `json:"table"`
	Tally
}

// NewTallies returns the row of the table "tallies".
func NewTallies(s *tallied.Sum) Tallies { return Tallies{"tallies", NewTally(s)} }
