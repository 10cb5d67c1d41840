package pull

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/otelrecords/otelrecords/sessions"
)

// This file is where what a pull reads meets what the stores hold: a
// batch of records is compared, by their session and seq, with what the
// staging store holds (taken by this pull) and what the store pulled into
// holds (there before it), a range of seqs read at a time; what neither
// holds is staged; at the end, what was staged is written into the store.

// stampKey names a record: its kind and stamp.
type stampKey struct {
	kind string
	id   sessions.SessionID
	seq  uint64
}

// candidate is a record read, not yet compared with the stores.
type candidate struct {
	kind      string
	rec       sessions.Stamped[sessions.Record]
	enc       []byte // rec, encoded as a store holds it
	corrected bool   // its times were corrected
	held      bool   // a store holds its stamp (counted as it is found)
	conflict  bool   // with other content
	inStore   bool   // the store pulled into
}

// queue adds a record read to the batch, and stages the batch when it is
// full.
func (p *puller) queue(kind string, rec sessions.Stamped[sessions.Record], corrected bool) error {
	enc, err := rec.AppendCBOR(nil)
	if err != nil {
		p.read.tooLarge++ // no store can hold it
		return nil
	}
	key := stampKey{kind, rec.Stamp.Session, rec.Stamp.Seq}
	if i, ok := p.byStamp[key]; ok {
		p.compared(&p.cands[i], enc, &p.read.repeated)
		return nil
	}
	if p.byStamp == nil {
		p.byStamp = map[stampKey]int{}
	}
	p.byStamp[key] = len(p.cands)
	p.cands = append(p.cands, candidate{kind: kind, rec: rec, enc: enc, corrected: corrected})
	p.candBytes += len(enc)
	if len(p.cands)+len(p.batchRows) >= putBatch || p.candBytes >= maxBatchBytes {
		return p.flush()
	}
	return nil
}

// compared counts a record read whose stamp is held with held: in same
// when the content is the same, as a conflict otherwise.
func (p *puller) compared(c *candidate, held []byte, same *int) {
	if bytes.Equal(c.enc, held) {
		*same++
		return
	}
	c.conflict = true
	p.read.conflicts++
	p.read.conflictSessions = noteConflicts(p.read.conflictSessions, c.rec.Stamp.Session)
}

// flush compares the batch with the stores, and stages what they do not
// hold.
func (p *puller) flush() error {
	if len(p.cands) == 0 && len(p.batchRows) == 0 {
		return nil
	}
	// The staging store first: most records a pull reads twice, it took
	// in an answer a window replaced.
	if err := p.compare(p.stage, &p.read.repeated); err != nil {
		return err
	}
	if err := p.compare(p.r, &p.read.present); err != nil {
		return err
	}
	for i := range p.cands {
		if c := &p.cands[i]; c.held && c.conflict && c.inStore {
			p.conflicted[c.rec.Stamp.Session] = true
		}
	}
	var take []sessions.KindRecord
	corrected := 0
	for i := range p.cands {
		if c := &p.cands[i]; !c.held {
			take = append(take, sessions.KindRecord{Kind: c.kind, Stamped: c.rec})
			if c.corrected {
				corrected++
			}
		}
	}
	fresh, err := p.freshSessions(take)
	if err != nil {
		return err
	}
	staged := map[sessions.SessionID]bool{}
	err = p.stage.Put(p.batchRows, take)
	if errors.Is(err, sessions.ErrTooLarge) {
		err = p.putEach(take, staged)
	} else if err == nil {
		p.progress.Taken += len(take)
		p.progress.Corrected += corrected
		for _, row := range p.batchRows {
			staged[row.ID] = true
		}
		for _, kr := range take {
			staged[kr.Stamp.Session] = true
		}
	}
	if err != nil {
		return err
	}
	for id := range staged {
		if fresh[id] {
			p.sessionsTaken++
		}
		if len(p.staged) >= maxStagedKnown {
			clear(p.staged)
			p.stagedForgot = true
		}
		p.staged[id] = true
	}
	clear(p.cands) // let the records go
	clear(p.byStamp)
	p.cands, p.batchRows, p.candBytes = p.cands[:0], p.batchRows[:0], 0
	return nil
}

// compare reads, from r, the records of the batch's stamps that it holds,
// a range of seqs of a kind and session at a time (a record at a time
// where the seqs are far apart), and counts each in same, or as a
// conflict.
func (p *puller) compare(r *sessions.Records, same *int) error {
	var open []int
	for i := range p.cands {
		if !p.cands[i].held {
			open = append(open, i)
		}
	}
	slices.SortFunc(open, func(a, b int) int {
		x, y := &p.cands[a].rec.Stamp, &p.cands[b].rec.Stamp
		return cmp.Or(cmp.Compare(p.cands[a].kind, p.cands[b].kind), cmp.Compare(x.Session, y.Session), cmp.Compare(x.Seq, y.Seq))
	})
	var enc []byte
	found := func(c *candidate, rec sessions.Stamped[sessions.Record]) error {
		var err error
		if enc, err = rec.AppendCBOR(enc[:0]); err != nil {
			return err
		}
		c.held, c.inStore = true, r == p.r
		p.compared(c, enc, same)
		return nil
	}
	for len(open) > 0 {
		first := &p.cands[open[0]]
		n := 1
		for n < len(open) && p.cands[open[n]].kind == first.kind && p.cands[open[n]].rec.Stamp.Session == first.rec.Stamp.Session {
			n++
		}
		group := open[:n]
		open = open[n:]
		kind, id := first.kind, first.rec.Stamp.Session
		lo, hi := first.rec.Stamp.Seq, p.cands[group[n-1]].rec.Stamp.Seq
		if hi-lo > uint64(4*n+64) {
			for _, i := range group {
				rec, ok, err := r.Record(kind, id, p.cands[i].rec.Stamp.Seq)
				if err != nil {
					return err
				}
				if ok {
					if err := found(&p.cands[i], rec); err != nil {
						return err
					}
				}
			}
			continue
		}
		for rec, err := range r.All(kind, sessions.InSessionFrom(id, lo)) {
			if err != nil {
				return err
			}
			if rec.Stamp.Seq > hi {
				break
			}
			at, ok := slices.BinarySearchFunc(group, rec.Stamp.Seq, func(i int, seq uint64) int { return cmp.Compare(p.cands[i].rec.Stamp.Seq, seq) })
			if ok {
				if err := found(&p.cands[group[at]], rec); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// freshSessions returns the sessions of the batch the staging store holds
// nothing of yet.
func (p *puller) freshSessions(take []sessions.KindRecord) (map[sessions.SessionID]bool, error) {
	fresh := map[sessions.SessionID]bool{}
	check := func(id sessions.SessionID) error {
		if _, seen := fresh[id]; seen || p.staged[id] {
			return nil
		}
		if !p.stagedForgot {
			fresh[id] = true // p.staged knows every session staged
			return nil
		}
		_, has, err := p.stage.Session(id)
		for _, err2 := range p.stage.Stamps(sessions.InSession(id)) {
			has, err = true, cmp.Or(err, err2)
			break
		}
		fresh[id] = !has
		return err
	}
	for _, row := range p.batchRows {
		if err := check(row.ID); err != nil {
			return nil, err
		}
	}
	for _, kr := range take {
		if err := check(kr.Stamp.Session); err != nil {
			return nil, err
		}
	}
	return fresh, nil
}

// putEach stages the queued rows, then the records, one at a time,
// stepping over (and counting) those no store takes: spans in the backend
// that map to a row or record larger than a writer writes, or than a
// reader decodes, which a reader would skip. It is the slow way, taken
// only when a batch was refused for one. A session whose row is refused
// gets its records without it, as a session whose row was pruned has
// them.
func (p *puller) putEach(take []sessions.KindRecord, staged map[sessions.SessionID]bool) error {
	for i, row := range p.batchRows {
		err := p.stage.Put(p.batchRows[i:i+1], nil)
		switch {
		case errors.Is(err, sessions.ErrTooLarge):
			p.read.tooLarge++
			delete(p.rows, row.ID) // read again, it is refused again
		case err != nil:
			return err
		default:
			staged[row.ID] = true
		}
	}
	for i, kr := range take {
		err := p.stage.Put(nil, take[i:i+1])
		switch {
		case errors.Is(err, sessions.ErrTooLarge):
			p.read.tooLarge++
		case err != nil:
			return err
		default:
			p.progress.Taken++
			staged[kr.Stamp.Session] = true
			if c := p.cands[p.byStamp[stampKey{kr.Kind, kr.Stamp.Session, kr.Stamp.Seq}]]; c.corrected {
				p.progress.Corrected++
			}
		}
	}
	return nil
}

// commit writes what the pull staged into the store: the rows, then the
// records, kind by kind, a batch at a time. The rows of the store's
// sessions labelled otherwise in the backend are staged first, but for
// those in conflict.
func (p *puller) commit() error {
	for id, row := range p.relabels {
		if !p.conflicted[id] {
			p.batchRows = append(p.batchRows, row)
		}
	}
	p.read = answerCounts{}
	if err := p.flush(); err != nil {
		return err
	}
	p.read.addTo(&p.progress)
	var rows []sessions.Session
	for row, err := range p.stage.Sessions() {
		if err != nil {
			return err
		}
		if rows = append(rows, row); len(rows) == 256 {
			if err := p.r.Put(rows, nil); err != nil {
				return p.partly(err)
			}
			rows = rows[:0]
		}
	}
	if err := p.r.Put(rows, nil); err != nil {
		return p.partly(err)
	}
	kinds, err := p.stage.Kinds()
	if err != nil {
		return err
	}
	var (
		batch []sessions.KindRecord
		size  int
		enc   []byte
	)
	put := func() error {
		if err := p.r.Put(nil, batch); err != nil {
			return p.partly(err)
		}
		p.progress.Records += len(batch)
		clear(batch)
		batch, size = batch[:0], 0
		return nil
	}
	for _, kind := range kinds {
		for rec, err := range p.stage.All(kind) {
			if err != nil {
				return err
			}
			if enc, err = rec.AppendCBOR(enc[:0]); err != nil {
				return err
			}
			batch, size = append(batch, sessions.KindRecord{Kind: kind, Stamped: rec}), size+len(enc)
			if len(batch) >= putBatch || size >= maxBatchBytes {
				if err := put(); err != nil {
					return err
				}
			}
		}
	}
	if err := put(); err != nil {
		return err
	}
	if err := p.commitTallies(); err != nil {
		return err
	}
	p.progress.Sessions = p.sessionsTaken
	return nil
}

// partly is the error of a write into the store that failed after others.
func (p *puller) partly(err error) error {
	return fmt.Errorf("writing what it read into the store (%d of %d records written): %w", p.progress.Records, p.progress.Taken, err)
}
