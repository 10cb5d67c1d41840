package explain_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/sessions"
)

// exampleSession records one session in a store in memory, as a model
// build instrumented with spans would: a mark for the whole build, an
// autotune that ran two candidates, a compile, and beside them a request
// another client sent (its own trace, so a root of its own). It returns a
// reader of the store and the session's id.
func exampleSession() (*sessions.Records, sessions.SessionID) {
	ms := time.Millisecond
	store := sessions.NewMemStore()
	id := record(store, []span{
		{kind: "marks", name: "build qwen3-8b", at: 0, wall: 90 * ms, id: 1},
		{kind: "autotune", name: "matmul/4096", at: 5 * ms, wall: 40 * ms, id: 2, parent: 1},
		{kind: "candidate", name: "tiled", at: 5 * ms, wall: 15 * ms, id: 3, parent: 2},
		{kind: "request", name: "GET /status", at: 10 * ms, wall: 20 * ms, id: 1, trace: 2},
		{kind: "candidate", name: "split-k", at: 20 * ms, wall: 20 * ms, id: 4, parent: 2},
		{kind: "compile", name: "matmul kernel", at: 45 * ms, wall: 40 * ms, id: 5, parent: 1},
	})
	return sessions.NewRecords(store.Reopen()), id
}

// A session's records nest by parent span id: the request, which ran
// while the autotune did, is a root beside the build, not inside it.
func ExampleTree() {
	r, id := exampleSession()
	tree, err := explain.Tree(r, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	for n := range tree.Walk() {
		name, _ := tree.Name(n)
		fmt.Printf("%-8v %-6v %s%s: %s\n", n.Offset, n.Wall, strings.Repeat("  ", int(n.Depth)), tree.Kind(n), name)
	}
	// Output:
	// 0s       90ms   marks: build qwen3-8b
	// 5ms      40ms     autotune: matmul/4096
	// 5ms      15ms       candidate: tiled
	// 20ms     20ms       candidate: split-k
	// 45ms     40ms     compile: matmul kernel
	// 10ms     20ms   request: GET /status
}

// Nest places records as they are read, for a program that goes through
// a session once: each comes with its depth and its parent's seq.
func ExampleNest() {
	r, id := exampleSession()
	for n, err := range explain.Nest(explain.InStampOrder(r, id, nil)) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if n.Depth == 0 {
			fmt.Printf("seq %d %s: a root\n", n.Stamp.Seq, n.Record.Name)
		} else {
			fmt.Printf("seq %d %s: depth %d, under seq %d\n", n.Stamp.Seq, n.Record.Name, n.Depth, n.ParentSeq)
		}
	}
	// Output:
	// seq 0 build qwen3-8b: a root
	// seq 1 matmul/4096: depth 1, under seq 0
	// seq 2 tiled: depth 2, under seq 1
	// seq 3 GET /status: a root
	// seq 4 split-k: depth 2, under seq 1
	// seq 5 matmul kernel: depth 1, under seq 0
}

// A summary counts each kind's time once: the two candidates ran one
// after the other for 35ms in all, and the build's mark covers 90ms
// however much ran inside it.
func ExampleSessionTree_Summary() {
	r, id := exampleSession()
	tree, err := explain.Tree(r, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	s := tree.Summary()
	fmt.Printf("%d records over %v\n", s.Records, s.Duration())
	for _, k := range s.Kinds {
		fmt.Printf("%-9s %d %v\n", k.Kind, k.Records, k.Wall)
	}
	// Output:
	// 6 records over 90ms
	// autotune  1 40ms
	// candidate 2 35ms
	// compile   1 40ms
	// marks     1 90ms
	// request   1 20ms
}

// The critical path is what the build waited on: the compile, before it
// the autotune and both its candidates in turn, and what the build's mark
// did itself. The request ran beside it.
func ExampleSessionTree_CriticalPath() {
	r, id := exampleSession()
	tree, err := explain.Tree(r, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, step := range tree.CriticalPath() {
		n := tree.BySeq(step.Seq)
		name, _ := tree.Name(n)
		fmt.Printf("%s%s: %v\n", strings.Repeat("  ", int(n.Depth)), name, step.Critical)
	}
	// Output:
	// build qwen3-8b: 10ms
	//   matmul/4096: 5ms
	//     tiled: 15ms
	//     split-k: 20ms
	//   matmul kernel: 40ms
}

// Rework adds up what parents spent in their children, over sessions.
func ExampleRework() {
	r, id := exampleSession()
	var w explain.Rework
	for kr, err := range explain.InStampOrder(r, id, nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if err := w.Add(kr); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, c := range w.Children() {
		fmt.Printf("%s -> %s: %d parents, %d children, %v\n", c.Parent, c.Child, c.Parents, c.Children, c.Wall)
	}
	// Output:
	// marks -> autotune: 1 parents, 1 children, 40ms
	// marks -> compile: 1 parents, 1 children, 40ms
	// autotune -> candidate: 1 parents, 2 children, 35ms
}

// A server's session has a root per request: RootGroups sums them up by
// kind and name, and SlowestRoots picks the few worth expanding.
func ExampleSessionTree_RootGroups() {
	store := sessions.NewMemStore()
	var spans []span
	for i := range 20 {
		wall := time.Duration(1+i%5) * time.Millisecond
		if i == 13 {
			wall = 90 * time.Millisecond // the slow one
		}
		spans = append(spans, span{kind: "marks", name: "GET /lookup", at: time.Duration(i) * 100 * time.Millisecond, wall: wall, id: uint64(i + 1), trace: uint64(i + 1)})
	}
	spans = append(spans, span{kind: "marks", name: "GET /health", at: 2 * time.Second, wall: time.Millisecond, id: 99, trace: 99})
	id := record(store, spans)
	tree, err := explain.Tree(sessions.NewRecords(store.Reopen()), id)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range tree.RootGroups() {
		fmt.Printf("%s ×%d: median %v, p90 %v, max %v (seq %d)\n", g.Name, g.Count, g.Median, g.P90, g.Max, g.Slowest)
	}
	fmt.Println("expand:", tree.SlowestRoots(3))
	// Output:
	// GET /lookup ×20: median 3ms, p90 5ms, max 90ms (seq 13)
	// GET /health ×1: median 1ms, p90 1ms, max 1ms (seq 20)
	// expand: [13 4 9]
}

// Walk reads a store a session at a time, each session's records in the
// order they were stamped: here, a tree per session, built and dropped,
// so that memory follows the largest session rather than the store.
func ExampleWalk() {
	r, _ := exampleSession()
	var b explain.TreeBuilder
	err := explain.Walk(r, explain.Visitor{
		Record: b.Add,
		End: func(s sessions.Session) error {
			t := b.Tree()
			fmt.Printf("session %q: %d records, %d requests, lasted %v\n", s.Label, t.Len(), t.Requests(), t.Summary().End)
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// session "": 6 records, 2 requests, lasted 90ms
}
