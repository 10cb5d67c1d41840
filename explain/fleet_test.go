package explain_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

// lookup is one request's lookup of key in the common cache shape, as a
// sender's spans reach a gateway (otlp): the lookup is a record of kind
// cache with its key and result; a miss changes something (it fills the
// cache) and computes the value inside, in a compute record; a hit
// changes nothing. With enclose, the other common shape: the lookup
// changes nothing itself, miss or hit, and the compute inside it changes
// something.
func lookup(at, wall time.Duration, key string, miss, enclose bool, id uint64) []span {
	result := "hit"
	if miss {
		result = "miss"
	}
	out := []span{{kind: "cache", name: "lookup", at: at, wall: wall, id: id, trace: id, internal: true, otlp: true,
		observed: !miss || enclose, attrs: sessions.Attrs{str("cache.key", key), str("result", result)}}}
	if miss {
		out = append(out, span{kind: "compute", name: "compute", at: at, wall: wall - 1, id: id + 1, parent: id, trace: id,
			internal: true, otlp: true, attrs: sessions.Attrs{str("compute.key", key)}})
	}
	return out
}

// instance returns the configuration of a session of instance name of
// the service, on host name's host.
func instance(name string) recorder.Config {
	return recorder.Config{Resource: sessions.Attrs{str("service.name", "api"), str("service.instance.id", name),
		str("host.name", "host-"+name)}}
}

// fleetSession is one session of a fleet's store: its instance and its
// spans.
type fleetSession struct {
	instance string
	spans    []span
}

// fleetStore records sessions an hour apart, in the order given.
func fleetStore(ss ...fleetSession) *sessions.Records {
	store := sessions.NewMemStore()
	for i, s := range ss {
		recordWith(testsupport.NoClose{Store: store}, epoch.Add(time.Duration(i)*time.Hour), instance(s.instance), s.spans)
	}
	return sessions.NewRecords(store.Reopen())
}

// whyLines returns what Why says of kind's records of key=value, a line
// each: cause, verdict, the seq compared with, and what else it says.
func whyLines(t *testing.T, r *sessions.Records, kind, key, value string) []string {
	t.Helper()
	var lines []string
	for reason, err := range explain.Why(r, kind, key, sessions.StringValue(value)) {
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%d/%d %s %s", hourOf(reason.Stamp.Session), reason.Stamp.Seq, reason.Cause, reason.Verdict)
		if reason.Inside != nil {
			line += " inside " + reason.Inside.Kind
		}
		if reason.HasPrevious {
			line += fmt.Sprintf(" prev %d/%d", hourOf(reason.Previous.Session), reason.Previous.Seq)
		}
		if reason.AtOnce > 0 {
			line += fmt.Sprintf(" at once %d", reason.AtOnce)
		}
		for _, d := range reason.Differences {
			line += fmt.Sprintf(" %s:%s>%s", d.Key, side(d.Before), side(d.After))
		}
		lines = append(lines, line)
	}
	return lines
}

// hourOf returns which test session id is: the hour after epoch it began.
func hourOf(id sessions.SessionID) int { return int(time.Unix(0, int64(id)).Sub(epoch) / time.Hour) }

// lookupWork returns Rework's count of the cache records of key.
func lookupWork(t *testing.T, r *sessions.Records, key string) explain.KeyWork {
	t.Helper()
	var w explain.Rework
	for s, err := range r.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		w.Begin(s)
		if err := addSessions(&w, r, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range w.Redone() {
		if v, _ := k.Key.Get("cache.key"); k.Kind == "cache" && len(k.Key) == 1 && v.String() == key {
			return k
		}
	}
	t.Fatalf("no cache record of %s looked up more than once: %+v", key, w.Redone())
	return explain.KeyWork{}
}

// A record says its effect when a writer that stores effects wrote it:
// one made from a span has a span kind (through OTLP too, which does not
// say its inputs) or inputs. Only a record with neither, nor a changed
// effect, does not say (issue 43: a gateway's hits read as null, and so
// as work).
func TestStoredBodyEffect(t *testing.T) {
	for _, c := range []struct {
		rec   sessions.Record
		want  sessions.Effect
		known bool
	}{
		{sessions.Record{Effect: sessions.Changed}, sessions.Changed, true},
		{sessions.Record{SpanKind: "internal"}, sessions.Observed, true}, // a hit through the Collector
		{sessions.Record{Inputs: []string{}}, sessions.Observed, true},   // a hit of this process's SDK
		{sessions.Record{SpanKind: "server", Effect: sessions.Changed}, sessions.Changed, true},
		{sessions.Record{Name: "older than effects"}, sessions.Observed, false}, // written before records kept them
	} {
		effect, known := explain.StoredBody.Effect(&c.rec)
		if effect != c.want || known != c.known {
			t.Errorf("%+v: effect %v known %v, want %v %v", c.rec, effect, known, c.want, c.known)
		}
	}
}

// A lookup that missed (and so changed something) and then hit is new,
// then observed: the cache answered once it was filled (issue 43: through
// the Collector the hits read as "forgotten ... the cache lost it", and
// cost counted 0 hits).
func TestWhyCacheHitsAfterAMiss(t *testing.T) {
	for _, enclose := range []bool{false, true} {
		var spans []span
		for i := range 4 {
			spans = append(spans, lookup(time.Duration(10*i)*time.Millisecond, 3*time.Millisecond, "k1", i == 0, enclose, uint64(10*i+1))...)
		}
		r := fleetStore(fleetSession{"a", spans})
		want := []string{"0/0 new changed", "0/2 observed hit prev 0/0", "0/3 observed hit prev 0/0", "0/4 observed hit prev 0/0"}
		if enclose {
			want[0] = "0/0 new missed inside compute"
		}
		if got := whyLines(t, r, "cache", "cache.key", "k1"); !slices.Equal(got, want) {
			t.Errorf("enclose %v: why cache cache.key=k1:\n%q\nwant\n%q", enclose, got, want)
		}
		k := lookupWork(t, r, "k1")
		if k.Records != 4 || k.Hits != 3 || k.Misses != 1 || k.Redos != 0 || k.Raced != 0 || k.NewHere != 0 {
			t.Errorf("enclose %v: cost of k1 %+v; want 4 records, 3 hits, 1 miss, nothing redone", enclose, k)
		}
	}
}

// Work of another instance is new here: each instance has a cache of its
// own. A restart of an instance is compared with that instance's own
// work, not the fleet's latest (issue 43: instance B's first miss read
// "forgotten ... as session <A run 1>").
func TestWhyAnotherInstance(t *testing.T) {
	ms := time.Millisecond
	miss := lookup(0, 3*ms, "k2", true, false, 1)
	hit := lookup(10*ms, 3*ms, "k2", false, false, 11)
	r := fleetStore(
		fleetSession{"a", append(slices.Clone(miss), hit...)}, // hour 0: a computes k2, then hits
		fleetSession{"b", append(slices.Clone(miss), hit...)}, // hour 1: b, its own cache, does the same
		fleetSession{"b", miss},                               // hour 2: b restarted, its cache lost
		fleetSession{"a", miss},                               // hour 3: a restarted
	)
	want := []string{
		"0/0 new changed",
		"0/2 observed hit prev 0/0",
		"1/0 new_here changed prev 0/0 host.name:host-a>host-b service.instance.id:a>b",
		"1/2 observed hit prev 1/0",
		"2/0 forgotten changed prev 1/0",
		"3/0 forgotten changed prev 0/0",
	}
	if got := whyLines(t, r, "cache", "cache.key", "k2"); !slices.Equal(got, want) {
		t.Errorf("why cache cache.key=k2:\n%q\nwant\n%q", got, want)
	}
	k := lookupWork(t, r, "k2")
	if k.Records != 6 || k.Hits != 2 || k.Misses != 4 || k.NewHere != 1 || k.Redos != 2 || k.Raced != 0 {
		t.Errorf("cost of k2 %+v; want 6 records, 2 hits, 4 misses: 1 new here, 2 redone", k)
	}
}

// Requests that compute a key at once, in one session, raced: neither
// could find the other's work, not yet done. The lookup that finds it
// done is a hit, in either shape.
func TestWhyRaced(t *testing.T) {
	ms := time.Millisecond
	for _, enclose := range []bool{false, true} {
		var spans []span
		for i := range 3 { // three requests for k2 at once
			spans = append(spans, lookup(time.Duration(i)*ms, 10*ms, "k2", true, enclose, uint64(10*i+1))...)
		}
		spans = append(spans, lookup(20*ms, 3*ms, "k2", false, enclose, 41)...)
		r := fleetStore(fleetSession{"a", spans})
		work := "changed"
		if enclose {
			work = "missed inside compute"
		}
		want := []string{
			"0/0 new " + work,
			"0/2 raced " + work + " prev 0/0 at once 2",
			"0/4 raced " + work + " prev 0/2 at once 3",
			"0/6 observed hit prev 0/4",
		}
		if got := whyLines(t, r, "cache", "cache.key", "k2"); !slices.Equal(got, want) {
			t.Errorf("enclose %v: why cache cache.key=k2:\n%q\nwant\n%q", enclose, got, want)
		}
		// The computes inside say the same.
		want = []string{"0/1 new changed", "0/3 raced changed prev 0/1 at once 2", "0/5 raced changed prev 0/3 at once 3"}
		if got := whyLines(t, r, "compute", "compute.key", "k2"); !slices.Equal(got, want) {
			t.Errorf("enclose %v: why compute compute.key=k2:\n%q\nwant\n%q", enclose, got, want)
		}
		k := lookupWork(t, r, "k2")
		if k.Records != 4 || k.Hits != 1 || k.Misses != 3 || k.Raced != 2 || k.RacedWall != 20*ms || k.Redos != 0 {
			t.Errorf("enclose %v: cost of k2 %+v; want 4 records, 1 hit, 3 misses: 2 raced (20ms), none redone", enclose, k)
		}
	}
}

// Of two requests computing a key at once, the one that started later
// raced, whatever order they were stamped in: a gateway stamps requests
// in the order their traces reached it (issue 43: through the Collector,
// the request that started first was said to have raced the other).
func TestWhyRacedStampedOutOfOrder(t *testing.T) {
	ms := time.Millisecond
	for _, enclose := range []bool{false, true} {
		// The request started at 2ms came first to the gateway: seq 0.
		spans := append(lookup(2*ms, 7*ms, "k2", true, enclose, 11), lookup(0, 10*ms, "k2", true, enclose, 1)...)
		spans = append(spans, lookup(20*ms, 3*ms, "k2", false, enclose, 21)...)
		r := fleetStore(fleetSession{"a", spans})
		work := "changed"
		if enclose {
			work = "missed inside compute"
		}
		want := []string{"0/2 new " + work, "0/0 raced " + work + " prev 0/2 at once 2", "0/4 observed hit prev 0/0"}
		if got := whyLines(t, r, "cache", "cache.key", "k2"); !slices.Equal(got, want) {
			t.Errorf("enclose %v: why cache cache.key=k2:\n%q\nwant\n%q", enclose, got, want)
		}
		k := lookupWork(t, r, "k2")
		if k.Records != 3 || k.Hits != 1 || k.Misses != 2 || k.Raced != 1 || k.RacedWall != 7*ms || k.Redos != 0 {
			t.Errorf("enclose %v: cost of k2 %+v; want 3 records, 1 hit, 2 misses: 1 raced (7ms, the later one), none redone", enclose, k)
		}
	}
}

// A fleet's lookups of one key, as Why tells them: instance a computes
// k2 (a miss that filled its cache), and two requests of instance b
// compute it at once in b's own cache; then both hit; then b, restarted,
// computes it again.
func ExampleWhy_fleet() {
	ms := time.Millisecond
	a := append(lookup(0, 3*ms, "k2", true, false, 1), lookup(10*ms, ms, "k2", false, false, 11)...)
	b := append(lookup(0, 5*ms, "k2", true, false, 1), lookup(2*ms, 5*ms, "k2", true, false, 11)...)
	b = append(b, lookup(10*ms, ms, "k2", false, false, 21)...)
	r := fleetStore(fleetSession{"a", a}, fleetSession{"b", b}, fleetSession{"b", lookup(0, 3*ms, "k2", true, false, 1)})
	for reason, err := range explain.Why(r, "cache", "cache.key", sessions.StringValue("k2")) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("session %d seq %d: %s", hourOf(reason.Stamp.Session), reason.Stamp.Seq, reason.Cause)
		switch reason.Cause {
		case explain.NewHere:
			var keys []string
			for _, d := range reason.Differences {
				keys = append(keys, d.Key)
			}
			fmt.Printf(" (another %s than session %d's)", strings.Join(keys, " and "), hourOf(reason.Previous.Session))
		case explain.Raced:
			fmt.Printf(" (%d at once, with seq %d)", reason.AtOnce, reason.Previous.Seq)
		case explain.Forgotten:
			fmt.Printf(" (as session %d seq %d did it)", hourOf(reason.Previous.Session), reason.Previous.Seq)
		}
		fmt.Println()
	}
	// Output:
	// session 0 seq 0: new
	// session 0 seq 2: observed
	// session 1 seq 0: new_here (another host.name and service.instance.id than session 0's)
	// session 1 seq 2: raced (2 at once, with seq 0)
	// session 1 seq 4: observed
	// session 2 seq 0: forgotten (as session 1 seq 2 did it)
}
