package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/sessions"
)

func stamped(kind string, session sessions.SessionID, seq uint64, offset, wall time.Duration) kindRecord {
	return kindRecord{Kind: kind, Stamped: sessions.Stamped[sessions.Record]{
		Stamp:  sessions.Stamp{Session: session, Seq: seq, Offset: offset},
		Record: sessions.Record{Name: fmt.Sprintf("%s %d", kind, seq), Wall: wall},
	}}
}

// TestEachSession visits sessions with rows and records, rows without
// records, and records without rows, in id order.
func TestEachSession(t *testing.T) {
	rows := []sessions.Session{{ID: 1, Label: "one"}, {ID: 3, Label: "three"}, {ID: 5, Label: "five"}}
	records := []kindRecord{
		stamped("compile", 2, 0, 0, 0),
		stamped("compile", 3, 0, 0, 0), stamped("compile", 3, 1, 0, 0),
		stamped("compile", 6, 0, 0, 0),
	}
	var got []string
	seq := func(yield func(kindRecord, error) bool) {
		for _, kr := range records {
			if !yield(kr, nil) {
				return
			}
		}
	}
	err := eachSession(rows, seq, sessionVisitor{
		begin: func(s sessions.Session) error {
			got = append(got, fmt.Sprintf("begin %d %q", s.ID, s.Label))
			return nil
		},
		record: func(kr kindRecord) error {
			got = append(got, fmt.Sprintf("record %d/%d", kr.Stamp.Session, kr.Stamp.Seq))
			return nil
		},
		end: func(s sessions.Session) error {
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
