package importer

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// tallySpan reports whether s, of a batch under the Resource res, is a
// part of a tally, and if so takes it into rs (importer/internal/sent),
// not as a record. A span that says it is a tally's but carries none that
// decodes is dropped and reported. im.mu is held.
func (im *Importer) tallySpan(rs *remoteSession, res []attribute.KeyValue, s *Span) bool {
	if s.Name != spanbridge.TallyName || !spanbridge.IsTallySpan(s.Name, s.Attributes) {
		return false
	}
	from, _, err := spanbridge.FromResource(res)
	if err != nil {
		return false // no session says whose it is: a span as any other
	}
	t, _, err := spanbridge.FromTallySpan(from.ID, s.Name, s.Attributes)
	if err != nil {
		rs.problems++
		im.reports.Once("tally", fmt.Errorf("otelrecords: importer: a tally's span dropped: %w", err))
		return true
	}
	rs.tallies.Take(from.ID, t)
	return true
}
