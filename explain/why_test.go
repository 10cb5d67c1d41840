package explain_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/explain"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
)

func str(k, v string) sessions.Attr { return sessions.Attr{Key: k, Value: sessions.StringValue(v)} }

// tune is an autotune record of a key, with its inputs (the candidates)
// and its outcome (the winner).
func tune(at time.Duration, key, candidates, winner string) span {
	return span{kind: "autotune", name: "tune " + key, at: at, wall: time.Millisecond, id: uint64(at) + 1,
		attrs: sessions.Attrs{str("autotune.key", key), str("candidates", candidates), str("winner", winner)}}
}

// whyStore records three sessions: the second with another
// service.version than the first, the third with the second's.
func whyStore(sessionSpans ...[]span) *sessions.Records {
	store := sessions.NewMemStore()
	for i, spans := range sessionSpans {
		version := "1.0"
		if i > 0 {
			version = "1.1"
		}
		recordWith(testsupport.NoClose{Store: store}, epoch.Add(time.Duration(i)*time.Hour), recorder.Config{
			Resource: sessions.Attrs{str("service.name", "builder"), str("service.version", version),
				{Key: "process.pid", Value: sessions.Int64Value(int64(1000 + i))}},
		}, spans)
	}
	return sessions.NewRecords(store.Reopen())
}

// why returns the causes Why gives for autotune.key=key, and their
// differences as key:before>after.
func why(t *testing.T, r *sessions.Records, body explain.Body, key string) (causes []explain.Cause, diffs [][]string) {
	t.Helper()
	for reason, err := range explain.WhyWith(r, body, "autotune", "autotune.key", sessions.StringValue(key)) {
		if err != nil {
			t.Fatal(err)
		}
		causes = append(causes, reason.Cause)
		var ds []string
		for _, d := range reason.Differences {
			ds = append(ds, fmt.Sprintf("%s:%s>%s", d.Key, side(d.Before), side(d.After)))
		}
		diffs = append(diffs, ds)
	}
	return causes, diffs
}

func side(v *sessions.Value) string {
	if v == nil {
		return "-"
	}
	return v.String()
}

// effectAttr is a Body for records that say their effect in an attribute
// "effect", as records will once they carry it.
type effectAttr struct{}

func (effectAttr) Effect(rec *sessions.Record) (sessions.Effect, bool) {
	v, ok := rec.Attributes.Get("effect")
	if !ok {
		return sessions.Observed, false
	}
	if v.AsString() == "changed" {
		return sessions.Changed, true
	}
	return sessions.Observed, true
}

func (effectAttr) IsInput(rec *sessions.Record, key string) bool {
	return key != "effect" && explain.StoredBody.IsInput(rec, key)
}

func TestWhyNew(t *testing.T) {
	r := whyStore([]span{tune(0, "matmul", "tiled simd", "tiled"), tune(time.Millisecond, "conv", "tiled", "tiled")})
	causes, _ := why(t, r, explain.StoredBody, "conv")
	if !slices.Equal(causes, []explain.Cause{explain.New}) {
		t.Errorf("causes %v, want [new]: the first record of a key", causes)
	}
}

func TestWhyObserved(t *testing.T) {
	hit := tune(time.Millisecond, "matmul", "tiled simd", "tiled")
	hit.attrs = append(hit.attrs, str("effect", "observed"))
	r := whyStore([]span{tune(0, "matmul", "tiled simd", "tiled"), hit})
	causes, diffs := why(t, r, effectAttr{}, "matmul")
	if !slices.Equal(causes, []explain.Cause{explain.New, explain.Observed}) || diffs[1] != nil {
		t.Errorf("causes %v, differences %v; want [new observed], none", causes, diffs)
	}
	// StoredBody does not know the effect: the same record was done again.
	if causes, _ := why(t, r, explain.StoredBody, "matmul"); causes[1] == explain.Observed {
		t.Errorf("StoredBody says a record's effect, which records do not store yet")
	}
}

func TestWhyInputs(t *testing.T) {
	r := whyStore(
		[]span{tune(0, "matmul", "tiled simd", "tiled")},
		// The same candidates won differently: an outcome, not an input.
		[]span{tune(0, "matmul", "tiled simd split-k", "split-k")},
	)
	causes, diffs := why(t, r, explain.StoredBody, "matmul")
	if !slices.Equal(causes, []explain.Cause{explain.New, explain.Inputs}) ||
		!slices.Equal(diffs[1], []string{"candidates:tiled simd>tiled simd split-k"}) {
		t.Errorf("causes %v, differences %v; want [new inputs], the candidates", causes, diffs)
	}
}

func TestWhyEnvironment(t *testing.T) {
	r := whyStore(
		[]span{tune(0, "matmul", "tiled simd", "tiled")},
		[]span{tune(0, "matmul", "tiled simd", "simd")}, // only the winner differs, and the service's version
	)
	causes, diffs := why(t, r, explain.StoredBody, "matmul")
	if !slices.Equal(causes, []explain.Cause{explain.New, explain.Environment}) ||
		!slices.Equal(diffs[1], []string{"service.version:1.0>1.1"}) {
		t.Errorf("causes %v, differences %v; want [new environment], service.version (not process.pid)", causes, diffs)
	}
}

func TestWhyForgotten(t *testing.T) {
	r := whyStore(
		[]span{tune(0, "softmax", "a", "a")},
		[]span{tune(0, "matmul", "tiled simd", "tiled")},
		// The same work again, in the same environment as the session
		// before, under another process id.
		[]span{tune(0, "matmul", "tiled simd", "tiled")},
	)
	causes, diffs := why(t, r, explain.StoredBody, "matmul")
	if !slices.Equal(causes, []explain.Cause{explain.New, explain.Forgotten}) || diffs[1] != nil {
		t.Errorf("causes %v, differences %v; want [new forgotten], none", causes, diffs)
	}
}

// TestWhyComparesWithTheWorkDone compares a record with the last one that
// did the work, not with a cache hit between them.
func TestWhyComparesWithTheWorkDone(t *testing.T) {
	first := tune(0, "matmul", "tiled simd", "tiled")
	first.attrs = append(first.attrs, str("effect", "changed"))
	hit := tune(time.Millisecond, "matmul", "tiled", "tiled") // the hit's attributes differ
	hit.attrs = append(hit.attrs, str("effect", "observed"))
	again := tune(2*time.Millisecond, "matmul", "tiled simd", "tiled")
	again.attrs = append(again.attrs, str("effect", "changed"))
	r := whyStore([]span{first, hit, again})
	var prev []uint64
	for reason, err := range explain.WhyWith(r, effectAttr{}, "autotune", "autotune.key", sessions.StringValue("matmul")) {
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev, reason.Previous.Seq)
		if reason.Stamp.Seq == 2 && reason.Cause != explain.Forgotten {
			t.Errorf("the third record: %v, want forgotten (as the first, which did the work)", reason.Cause)
		}
	}
	if !slices.Equal(prev, []uint64{0, 0, 0}) {
		t.Errorf("compared with seqs %v, want the first record each time", prev)
	}
}

// TestWhyMatchesAsText finds an integer attribute by its text, as the
// command line gives it.
func TestWhyMatchesAsText(t *testing.T) {
	s := span{kind: "autotune", name: "tune", wall: 1, id: 1, attrs: sessions.Attrs{{Key: "n", Value: sessions.Int64Value(int64(1024))}}}
	r := whyStore([]span{s})
	n := 0
	for _, err := range explain.Why(r, "autotune", "n", sessions.StringValue("1024")) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Errorf("found %d records of n=1024, want 1", n)
	}
}

// Why tells why each record of a key was done: the first tune of matmul
// was new; the second ran other candidates; the third ran the same ones
// again, in the same environment: the cache had lost the result.
func ExampleWhy() {
	r := whyStore(
		[]span{tune(0, "matmul", "tiled simd", "tiled")},
		[]span{tune(0, "matmul", "tiled simd split-k", "split-k")},
		[]span{tune(0, "matmul", "tiled simd split-k", "split-k")},
	)
	for reason, err := range explain.Why(r, "autotune", "autotune.key", sessions.StringValue("matmul")) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s, %s", time.Unix(0, int64(reason.Stamp.Session)).Sub(epoch), reason.Cause)
		for _, d := range reason.Differences {
			fmt.Printf(" (%s: %s → %s)", d.Key, side(d.Before), side(d.After))
		}
		fmt.Println()
	}
	// Output:
	// 0s, new
	// 1h0m0s, inputs (candidates: tiled simd → tiled simd split-k)
	// 2h0m0s, forgotten
}

// Work done again with the same inputs says what it came out as, before
// and after: a forgotten tune that picked another winner says so, and
// one that picked the same says that.
func TestWhyOutcome(t *testing.T) {
	r := whyStore(
		[]span{tune(0, "matmul", "tiled simd", "tiled")},
		[]span{tune(0, "matmul", "tiled simd", "tiled")},
		[]span{tune(0, "matmul", "tiled simd", "simd")},
	)
	var got []string
	for reason, err := range explain.Why(r, "autotune", "autotune.key", sessions.StringValue("matmul")) {
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprint(reason.Cause, " changed=", reason.OutcomeChanged())
		for _, d := range reason.Outcome {
			line += fmt.Sprintf(" %s:%v>%v", d.Key, side(d.Before), side(d.After))
		}
		got = append(got, line)
	}
	// The second session runs another service.version: environment.
	want := []string{"new changed=false", "environment changed=false winner:tiled>tiled", "forgotten changed=true winner:tiled>simd"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
