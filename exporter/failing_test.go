package exporter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/exporter"
	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// refusingStore fails every write after the first, as a disk that filled
// up does.
type refusingStore struct {
	*sessions.MemStore
	writes int
}

func (s *refusingStore) Write(es []sessions.Entry) error {
	if s.writes++; s.writes > 1 {
		return errors.New("input/output error")
	}
	return s.MemStore.Write(es)
}

// TestFailingStoreIsWrittenAtSpillBytes: while the store fails writes the
// loop retries it once a second, but the records it routes meanwhile do
// not pile up until then: at recorder.SpillBytes it writes, and the
// failed write sheds them. On synctest's clock no second passes, so
// without that every span ended would wait in memory.
func TestFailingStoreIsWrittenAtSpillBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProvider(t, "", exporter.WithStore(&refusingStore{MemStore: sessions.NewMemStore()}))
		p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
		if err := p.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.do("c", spanbridge.Kind("compile"), spanbridge.Changed())
		p.ForceFlush(context.Background()) // fails: the streak begins
		pad := attribute.String("pad", strings.Repeat("x", 1000))
		const n = 4 * recorder.SpillBytes / 1000
		for i := range n {
			p.do("w", spanbridge.Kind("work"), attribute.Int("i", i), pad)
			if i%1000 == 0 {
				synctest.Wait()
			}
		}
		synctest.Wait()
		s := p.exp.Stats()
		if s.Unwritable == 0 || s.Pending > recorder.SpillBytes/1000 {
			t.Errorf("Stats = %+v; want the oldest records dropped as unwritable, fewer than %d waiting", s, recorder.SpillBytes/1000)
		}
		p.Shutdown(context.Background()) // fails: the store still does
	})
}
