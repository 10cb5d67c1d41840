package importer

import (
	"time"

	"github.com/otelrecords/otelrecords/importer/internal/seen"
)

// spanRef identifies a span of a sender.
type spanRef = seen.Ref

// second is now as the seen table counts it: seconds from the Importer's
// epoch.
func (im *Importer) second(now time.Time) uint32 {
	return uint32(max(now.Sub(im.epoch), 0) / time.Second)
}

// fp returns the fingerprint of span ref of the sender salt.
func (im *Importer) fp(salt uint64, ref spanRef) uint64 { return im.seen.Fingerprint(salt, ref) }

// seenState returns what became of span ref of the session rs.
func (im *Importer) seenState(rs *remoteSession, ref spanRef) seen.State {
	return im.seen.State(im.fp(rs.salt, ref))
}

// remember sets the state of span ref of the session rs, and reports
// whether it was new.
func (im *Importer) remember(rs *remoteSession, ref spanRef, st seen.State, now time.Time) bool {
	return im.seen.Set(im.fp(rs.salt, ref), st, im.second(now))
}

// sweepEvery is how often the seen table is swept.
const sweepEvery = 10 * time.Second

// sweepSeen forgets spans placed more than the dedup window ago, every
// sweepEvery. im.mu is held.
func (im *Importer) sweepSeen(now time.Time) {
	if now.Sub(im.swept) < sweepEvery {
		return
	}
	im.swept = now
	sec, window := im.second(now), uint32(im.cfg.DedupWindow/time.Second)
	from := uint32(0)
	if sec > window {
		from = sec - window
	}
	im.seen.Sweep(from)
}
