package recorder

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// boundChunks is how many pieces the byte bound cuts the running
// session's records into: past the bound, the oldest piece goes, about
// 1/boundChunks of the bound at a time, so a session that writes steadily
// deletes now and then, not at every flush, and holds a few dozen numbers
// for it however long it runs.
const boundChunks = 16

// bound keeps a store within Config.MaxBytes. It counts bytes as the
// pending budget does, key + value of every entry under keys.Root: what
// the store holds live, which is what its disk comes down to once Badger
// compacts. The store's own size on disk would be what a user sees, but
// it is the wrong thing to steer by: deleted keys give their space back
// only after compaction, so the size would stay over the bound after a
// prune and the next one would take everything; and a store in memory
// has none. Counting is cheap: one scan of the store when the session is
// kept, then arithmetic on what the session writes and deletes, and
// another scan each time the session has written as many bytes as the
// bound, to see what other processes wrote meanwhile: at most one read of
// the (bounded) store per bound's worth of writes.
//
// Past the bound it deletes, first, whole other sessions older than this
// one, oldest first; then the oldest records of this session, by seq,
// never its row. Sessions newer than this one (other processes running
// beside it) are theirs to bound. A bound owns no lock: it is used only
// by the flush in progress (Recorder.flushing).
type bound struct {
	max      int64
	measured bool
	others   []sessionBytes // other sessions in the store, oldest first
	chunks   []chunk        // this session's records, oldest seqs first
	piece    int64          // a chunk is closed once it counts this many bytes
	own      int64          // bytes of this session's records
	row      int64          // bytes of this session's row
	tally    int64          // bytes of this session's tally part
	seen     bool           // a record of this session was counted
	maxSeq   uint64         // the highest seq counted
	since    int64          // bytes this session wrote since the last scan
}

// sessionBytes is what one other session takes in the store.
type sessionBytes struct {
	id    uint64
	bytes int64
}

// chunk counts the records of this session with seqs from lo up to the
// next chunk's lo; the first chunk counts every seq below the second's.
type chunk struct {
	lo    uint64
	bytes int64
}

func newBound(maxBytes int64) *bound {
	return &bound{max: maxBytes, piece: max(maxBytes/boundChunks, 1)}
}

// total is the store's size as the bound counts it.
func (b *bound) total() int64 {
	t := b.own + b.row + b.tally
	for _, s := range b.others {
		t += s.bytes
	}
	return t
}

// measure counts what the store holds of sessions other than own: the one
// scan of the store a kept session makes.
func (b *bound) measure(st sessions.Store, own uint64) error {
	sizes := map[uint64]int64{}
	for e, err := range st.Scan([]byte(keys.Root+"/"), []byte(keys.Root+"0")) {
		if err != nil {
			return fmt.Errorf("otelrecords: measure the store for its byte bound: %w", err)
		}
		_, id, _, err := keys.Parse(e.Key)
		if tid, _, ok := keys.ParseTally(e.Key); ok {
			id, err = tid, nil // a session's tally goes with it
		}
		if err != nil || id == own {
			continue // not ours to count, or this session's, counted as written
		}
		sizes[id] += int64(len(e.Key) + len(e.Value))
	}
	b.others = b.others[:0]
	for id, n := range sizes {
		b.others = append(b.others, sessionBytes{id, n})
	}
	slices.SortFunc(b.others, func(a, c sessionBytes) int { return cmp.Compare(a.id, c.id) })
	b.measured, b.since = true, 0
	return nil
}

// stale reports whether the session has written as many bytes as the
// bound since the store was last measured: time to measure it again.
func (b *bound) stale() bool { return b.since >= b.max }

// count adds entries this session wrote: its row replaces the row counted
// before, and each record goes to the chunk of its seq.
func (b *bound) count(entries []sessions.Entry) {
	for _, e := range entries {
		n := int64(len(e.Key) + len(e.Value))
		b.since += n
		if !keys.IsRecord(e.Key) {
			if keys.IsSession(e.Key) {
				b.row = n
			} else if _, _, ok := keys.ParseTally(e.Key); ok {
				b.tally = n // its part, written over
			}
			continue // an Importer's own entries are few and small
		}
		b.add(binary.BigEndian.Uint64(e.Key[len(e.Key)-8:]), n)
	}
}

func (b *bound) add(seq uint64, n int64) {
	if len(b.chunks) == 0 {
		b.chunks = append(b.chunks, chunk{})
	}
	if !b.seen || seq > b.maxSeq {
		// A new chunk starts past every seq counted, so the chunks' seq
		// ranges never overlap; a record ending late with a low seq (a
		// mark around the whole session) falls in the chunk of its seq.
		if last := b.chunks[len(b.chunks)-1]; b.seen && last.bytes >= b.piece {
			b.chunks = append(b.chunks, chunk{lo: b.maxSeq + 1})
		}
		b.seen, b.maxSeq = true, seq
	}
	i := sort.Search(len(b.chunks), func(i int) bool { return b.chunks[i].lo > seq }) - 1
	b.chunks[max(i, 0)].bytes += n
	b.own += n
}

// trimmed is what one trim deleted.
type trimmed struct {
	sessions, records int
}

// trim deletes what the bound says must go, and returns what it deleted.
// own is this session's id; fresh is what the flush just wrote, which
// stays: a record written late with an old seq (a mark open since the
// session began, ending now) falls in the oldest chunk, and deleting it in
// the flush that wrote it would make no sense. It goes with the oldest
// chunk at the next trim.
func (b *bound) trim(st sessions.Store, own uint64, fresh []sessions.Entry) (trimmed, error) {
	var done trimmed
	total := b.total()
	if total <= b.max {
		return done, nil
	}
	// Other sessions older than this one, oldest first: as many as it
	// takes, in one range per kind.
	n, freed := 0, int64(0)
	for n < len(b.others) && b.others[n].id < own && total-freed > b.max {
		freed += b.others[n].bytes
		n++
	}
	if n > 0 {
		rows, err := pruneUpTo(st, b.others[n-1].id)
		if err != nil {
			return done, err
		}
		done.sessions = rows
		b.others = slices.Delete(b.others, 0, n)
		total -= freed
	}
	// Then this session's oldest records, a chunk at a time, never the
	// newest chunk: the records being written are what the session is
	// doing now.
	for total > b.max && len(b.chunks) > 1 {
		hi := b.chunks[1].lo
		kept, keep := keepFresh(fresh, hi)
		deleted, err := deleteRecords(st, own, hi, keep)
		done.records += deleted
		if err != nil {
			return done, err
		}
		gone := b.chunks[0].bytes - kept
		total -= gone
		b.own -= gone
		b.chunks = slices.Delete(b.chunks, 0, 1)
		b.chunks[0].lo = 0
		b.chunks[0].bytes += kept
	}
	return done, nil
}

// keepFresh returns the bytes of the entries of fresh that are records
// with seqs below hi, and a match that spares them from a delete (nil when
// there are none, which is nearly always).
func keepFresh(fresh []sessions.Entry, hi uint64) (int64, func([]byte) bool) {
	var spared map[string]bool
	var n int64
	for _, e := range fresh {
		if keys.IsRecord(e.Key) && binary.BigEndian.Uint64(e.Key[len(e.Key)-8:]) < hi {
			if spared == nil {
				spared = map[string]bool{}
			}
			spared[string(e.Key)] = true
			n += int64(len(e.Key) + len(e.Value))
		}
	}
	if spared == nil {
		return 0, nil
	}
	return n, func(k []byte) bool { return !spared[string(k)] }
}

// pruneUpTo deletes every session whose id is at or below id, with its
// records (and those of every session at or below id whose row is gone),
// and returns how many session rows it deleted. It is Records.Prune with
// the cut given by id rather than by a count of sessions to keep: a count
// read before the deletes would take this session itself if another
// process wrote a newer row in between.
func pruneUpTo(st sessions.Store, id uint64) (int, error) {
	kinds, err := sessions.NewRecords(st).Kinds()
	if err != nil {
		return 0, err
	}
	// Records first, rows last, as Records.Prune does: a trim cut short
	// leaves rows, which the next prune takes with what remains.
	for _, kind := range kinds {
		ns := keys.Namespace(kind)
		if _, err := st.DeleteRange(keys.NamespaceStart(ns), keys.SessionBound(ns, id+1), keys.Parses); err != nil {
			return 0, err
		}
	}
	if _, err := st.DeleteRange(keys.NamespaceStart(keys.Sessions), keys.SessionBound(keys.Sessions, id+1), keys.IsTally); err != nil {
		return 0, err
	}
	return st.DeleteRange(keys.NamespaceStart(keys.Sessions), keys.SessionBound(keys.Sessions, id+1), keys.Parses)
}

// deleteRecords deletes the records of session id with seqs below seq, of
// every kind, that match (all of them when match is nil), and returns how
// many it deleted. A record's key ends in its session and seq, fixed
// width, so that is one range per kind.
func deleteRecords(st sessions.Store, id, seq uint64, match func([]byte) bool) (int, error) {
	kinds, err := sessions.NewRecords(st).Kinds()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, kind := range kinds {
		n, err := st.DeleteRange(keys.Record(kind, id, 0), keys.Record(kind, id, seq), match)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
