package pull

import (
	"errors"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
	"github.com/otelrecords/otelrecords/tallies"
)

// The parts of sessions' tallies a backend holds come back as they were
// (docs/MAPPING.md §8.6): each span of a tally (spanbridge.TallySpan) is
// its part again, under its session's id as the session's records are.
// A part is written again as it counts, and its counts only grow, so a
// backend may hold several versions of one: of those it reads and the
// one the store holds, a pull keeps the one with the highest count.

// tallyKey names a part of a session's tally.
type tallyKey struct {
	id   sessions.SessionID
	part uint64
}

// tally takes the span s when it is a part of a tally, and reports
// whether it was one: staged when it counts more than the store's part
// and what this pull staged of it. A span that says it is a tally's and
// carries none that decodes is refused.
func (p *puller) tally(s *span) (bool, error) {
	if s.SpanName != spanbridge.TallyName {
		return false, nil
	}
	switch p.cur.what {
	case fateNotRecord, fateRefused:
		return false, nil // counted as spans that are no records
	}
	t, _, err := spanbridge.FromTallySpan(p.cur.id, s.SpanName, s.Attributes())
	switch {
	case errors.Is(err, spanbridge.ErrNotTally):
		return false, nil
	case err != nil:
		p.read.spans++
		p.read.refused++
		return true, nil
	}
	p.read.spans++
	switch p.cur.what {
	case fateSkip:
		return true, nil
	case fateConflict:
		p.read.conflicts++
		return true, nil
	}
	k := tallyKey{p.cur.id, t.Part}
	if p.tallies == nil {
		p.tallies, p.tallyHeld = map[tallyKey]int64{}, map[tallyKey]int64{}
	}
	if n, ok := p.tallies[k]; ok && n >= t.Count() {
		return true, nil
	}
	held, ok := p.tallyHeld[k]
	if !ok {
		held = -1
		for part, err := range tallies.Parts(p.r, k.id) {
			if err != nil {
				return true, err
			}
			if part.Part == k.part {
				held = part.Count()
			}
		}
		p.tallyHeld[k] = held
	}
	if held >= t.Count() {
		return true, nil
	}
	switch err := tallies.Put(p.stage, t); {
	case errors.Is(err, sessions.ErrTooLarge):
		p.read.tooLarge++
		return true, nil
	case err != nil:
		return true, err
	}
	p.tallies[k] = t.Count()
	return true, nil
}

// commitTallies writes the parts of tallies the pull staged into the
// store, but those of sessions in conflict.
func (p *puller) commitTallies() error {
	for k := range p.tallies {
		if p.conflicted[k.id] || p.another[k.id] {
			continue
		}
		for t, err := range tallies.Parts(p.stage, k.id) {
			if err != nil {
				return err
			}
			if t.Part != k.part {
				continue
			}
			if err := tallies.Put(p.r, t); err != nil {
				return p.partly(err)
			}
			p.progress.Tallies++
		}
	}
	return nil
}
