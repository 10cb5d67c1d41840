package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// writeSkippedStore writes writeStore's store with two values more that
// do not decode, a compile and a marks record, and returns its directory.
func writeSkippedStore(t *testing.T) string {
	t.Helper()
	t.Setenv("OTELRECORDS_CACHE_DIR", t.TempDir())
	dir := writeStore(t)
	st, err := badgerstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	bad := []sessions.Entry{
		{Key: testsupport.RecordKey("compile", sessions.Stamp{Session: id1, Seq: 7}), Value: []byte{0xff, 0x00}},
		{Key: testsupport.RecordKey("marks", sessions.Stamp{Session: id2, Seq: 9}), Value: []byte("not cbor")},
	}
	if err := st.Write(bad); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHeldSkippedValues checks that stores held open between reads (records
// serve) count a value that did not decode as a command does, in the
// singular for one, and name the doctor's check of the store.
func TestHeldSkippedValues(t *testing.T) {
	dir := writeSkippedStore(t)
	log := new(lockedBuffer)
	held := (&stores.Dirs{Dir: dir, Given: []string{dir}, Wait: 5 * time.Second}).Hold(log)
	defer held.Close()
	err := held.Read(context.Background(), func(all *sessions.Records, _ []stores.Store) error {
		for _, err := range all.All("compile") {
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "records: 1 value did not decode and was skipped; run records doctor --check --dir " + dir + " to check the store's files for damage\n"
	if got := log.String(); !strings.Contains(got, want) {
		t.Errorf("log %q, want it to hold %q", got, want)
	}
}
