package badgerstore

import (
	"sync"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/store/badgerfmt/badgerfmttest"
	"github.com/otelrecords/otelrecords/sessions"
)

// TestReadersWhileWriting reads a Badger store with a typed read (which
// reads ahead on a goroutine of its own) and with Counts (keys only) from
// several goroutines while another writes to it, as a server's `records`
// reads run beside its writer: every read sees at least what was written
// before it began, in stamp order, each record whole, and the race
// detector sees the goroutines share nothing they should not.
func TestReadersWhileWriting(t *testing.T) {
	s := open(t)
	const session, batch = sessions.SessionID(7), 500
	write := func(first int) {
		if err := s.Write(badgerfmttest.Entries(session, first, batch)); err != nil {
			t.Error(err)
		}
	}
	write(0)
	r := sessions.NewRecords(s)
	type tune struct {
		Key   string        `record:"autotune.key"`
		Tried int64         `record:"tried"`
		Wall  time.Duration `record:",wall"`
	}

	done := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for first := batch; ; first += batch {
			select {
			case <-done:
				return
			default:
			}
			write(first)
		}
	})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for range 5 {
				before, err := r.Counts()
				if err != nil {
					t.Error(err)
					return
				}
				n, last := 0, int64(-1)
				for rec, err := range sessions.Typed[tune](r, "autotune") {
					if err != nil {
						t.Error(err)
						return
					}
					if rec.Record.Tried != int64(rec.Stamp.Seq) || rec.Record.Wall != time.Duration(rec.Stamp.Seq)*time.Microsecond || rec.Record.Tried <= last {
						t.Errorf("record %d read as %+v after %d", rec.Stamp.Seq, rec.Record, last)
						return
					}
					last = rec.Record.Tried
					n++
				}
				if want := before[session]["autotune"]; n < want {
					t.Errorf("typed read gave %d records, Counts said %d before it", n, want)
				}
			}
		})
	}
	readers.Wait()
	close(done)
	writer.Wait()
	if r.Skipped() != 0 {
		t.Errorf("skipped %d records", r.Skipped())
	}
}
