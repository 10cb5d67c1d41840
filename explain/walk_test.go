package explain_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

func stamped(kind string, session sessions.SessionID, seq uint64, offset, wall time.Duration) sessions.KindRecord {
	return sessions.KindRecord{Kind: kind, Stamped: sessions.Stamped[sessions.Record]{
		Stamp:  sessions.Stamp{Session: session, Seq: seq, Offset: offset},
		Record: sessions.Record{Name: fmt.Sprintf("%s %d", kind, seq), Wall: wall},
	}}
}

// TestWalk visits sessions with rows and records, rows without records,
// and records without rows, in id order.
func TestWalk(t *testing.T) {
	rows := []sessions.Session{{ID: 1, Label: "one"}, {ID: 3, Label: "three"}, {ID: 5, Label: "five"}}
	records := []sessions.KindRecord{
		stamped("compile", 2, 0, 0, 0),
		stamped("compile", 3, 0, 0, 0), stamped("compile", 3, 1, 0, 0),
		stamped("compile", 6, 0, 0, 0),
	}
	r := sessions.NewRecords(sessions.NewMemStore())
	if err := r.Put(rows, records); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := explain.Walk(r, explain.Visitor{
		Begin: func(s sessions.Session) error {
			got = append(got, fmt.Sprintf("begin %d %q", s.ID, s.Label))
			return nil
		},
		Record: func(kr sessions.KindRecord) error {
			got = append(got, fmt.Sprintf("record %d/%d", kr.Stamp.Session, kr.Stamp.Seq))
			return nil
		},
		End: func(s sessions.Session) error {
			got = append(got, fmt.Sprintf("end %d", s.ID))
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`begin 1 "one"`, "end 1",
		`begin 2 ""`, "record 2/0", "end 2",
		`begin 3 "three"`, "record 3/0", "record 3/1", "end 3",
		`begin 5 "five"`, "end 5",
		`begin 6 ""`, "record 6/0", "end 6",
	}
	if !slices.Equal(got, want) {
		t.Errorf("visits:\n got %q\nwant %q", got, want)
	}
}
