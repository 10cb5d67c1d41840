package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/testkit/bigstore"
	"github.com/otelrecords/otelrecords/pull"
	"github.com/otelrecords/otelrecords/sessions"
)

// pullBenchRecords is how many records BenchmarkJaegerPull pulls.
const pullBenchRecords = 100_000

// BenchmarkJaegerPull measures records pull of 100k records from a real
// Jaeger (bench/pull runs it and prints the medians). The store is built
// through the real Recorder (bigstore: 4 sessions of 25k records of kind
// work, a 200-byte payload each, their spans a tree, one trace a
// session), replayed into Jaeger once per run, and then:
//
//   - fetch (the reference): the answer a pull reads, read whole: what
//     Jaeger's query service and the loopback cost, no decoding;
//   - pull-discard: a pull into a store that keeps nothing, staged in one
//     that keeps nothing: fetching and decoding, no writing;
//   - pull: records pull's own work, into a new Badger store.
func BenchmarkJaegerPull(b *testing.B) {
	bin := jaegerBinary(b)
	j := startJaeger(b, bin)
	orig := filepath.Join(b.TempDir(), "orig")
	spec := bigstore.BigSpec{Bytes: pullBenchRecords * 200, Sessions: 4, ValueBytes: 200}
	if err := bigstore.BuildBig(orig, spec); err != nil {
		b.Fatal(err)
	}
	code, _, errOut := runRecords(b, "--dir", orig, "replay", "--endpoint", j.otlpGRPC, "--insecure", "--timeout", "60s")
	if code != exitOK {
		b.Fatalf("replay: exit %d: %s", code, errOut)
	}
	// Ingestion is asynchronous: wait until Jaeger answers with every
	// span.
	deadline := time.Now().Add(60 * time.Second)
	for {
		body := fetchAll(b, j)
		if n := bytes.Count(body, []byte(`"spanId"`)); n >= pullBenchRecords {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("Jaeger holds too few spans after 60s")
		}
		time.Sleep(500 * time.Millisecond)
	}

	b.Run("fetch", func(b *testing.B) {
		for b.Loop() {
			b.ReportMetric(float64(len(fetchAll(b, j)))/(1<<20), "MiB/op")
		}
	})
	b.Run("pull-discard", func(b *testing.B) {
		for b.Loop() {
			q, err := pull.NewJaeger(j.queryURL(), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			// Staged into nothing, written into nothing: what it takes is
			// counted, and none of it is written.
			p, err := pull.Pull(context.Background(), q, sessions.NewRecords(discardStore{}), pull.Options{Staging: discardStore{}})
			if err != nil || p.Taken != pullBenchRecords {
				b.Fatalf("pull: %+v, %v", p, err)
			}
		}
		b.ReportMetric(pullBenchRecords*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("pull", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			dir := filepath.Join(b.TempDir(), fmt.Sprint("pulled-", i))
			code, out, errOut := runRecords(b, "--dir", dir, "pull", "--from", j.queryURL(), "--insecure")
			if code != exitOK || out[:len("pulled 4 sessions, 100000 records")] != "pulled 4 sessions, 100000 records" {
				b.Fatalf("pull: exit %d: %s %s", code, out, errOut)
			}
		}
		b.ReportMetric(pullBenchRecords*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// fetchAll returns the answer a pull here reads (the one query of its one
// service: 4 traces, fewer than a page), whole.
func fetchAll(b *testing.B, j *jaeger) []byte {
	b.Helper()
	q := url.Values{
		"query.service_name":   {"unknown_service"},
		"query.start_time_min": {time.Unix(0, 0).UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {fmt.Sprint(pull.DefaultPageTraces)},
		"query.raw_traces":     {"true"},
	}
	resp, err := http.Get(j.queryURL() + "/api/v3/traces?" + q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("fetch: %s %v", resp.Status, err)
	}
	return body
}

// discardStore is a store that holds nothing: a pull into it costs the
// fetching and decoding, not the writing.
type discardStore struct{}

func (discardStore) Write([]sessions.Entry) error { return nil }
func (discardStore) Scan([]byte, []byte) iter.Seq2[sessions.Entry, error] {
	return func(func(sessions.Entry, error) bool) {}
}
func (discardStore) DeleteRange([]byte, []byte, func([]byte) bool) (int, error) { return 0, nil }
func (discardStore) Close() error                                               { return nil }
