package sessions

import (
	"iter"
	"runtime"
)

// A typed read of a kind spends about as long in the store (Badger's
// iterator, decompressing blocks) as in decoding what it yields, so on more
// than one CPU Typed reads ahead: a goroutine scans and copies entries in
// batches while the caller's goroutine decodes the batch before. A typed
// read of a million records then runs at about 1.3x a raw Badger
// iteration that copies each value, against 0.8x in one goroutine
// (BENCHMARKS.md, figure 6); the CPU per record is the same, plus the copy.
// All and Sessions do not: their readers merge many kinds at once
// (InStampOrder, package explain), where a goroutine and up to
// aheadBatches*aheadBytes of entries per kind read before they are wanted
// would cost more than they save.
const (
	// aheadEntries is how many entries a batch holds at most.
	aheadEntries = 256
	// aheadBytes is how many bytes of keys and values a batch holds before
	// it is handed over, however few its entries.
	aheadBytes = 256 << 10
	// aheadBatches is how many batches a read ahead uses: the one being
	// filled, one waiting, and the one being decoded.
	aheadBatches = 3
)

// An aheadBatch is a run of entries copied out of a scan.
type aheadBatch struct {
	buf     []byte   // the keys and values, back to back
	offsets [][3]int // each entry's key start, value start (the key's end) and value end in buf
	entries []Entry  // the entries, into buf, once the batch is full
	err     error    // the error that ended the scan after these entries
}

func (b *aheadBatch) add(e Entry) {
	k := len(b.buf)
	b.buf = append(b.buf, e.Key...)
	v := len(b.buf)
	b.buf = append(b.buf, e.Value...)
	b.offsets = append(b.offsets, [3]int{k, v, len(b.buf)})
}

// seal makes the batch's entries, once buf no longer grows.
func (b *aheadBatch) seal() {
	b.entries = b.entries[:0]
	for _, o := range b.offsets {
		e := Entry{Key: b.buf[o[0]:o[1]:o[1]]}
		if o[2] > o[1] {
			e.Value = b.buf[o[1]:o[2]:o[2]]
		}
		b.entries = append(b.entries, e)
	}
}

func (b *aheadBatch) reset() {
	b.buf, b.offsets, b.err = b.buf[:0], b.offsets[:0], nil
}

// scanAhead yields the entries of the store in [start, end) as Store.Scan does,
// reading ahead on a second goroutine when the process has more than one
// CPU to run it on. The goroutine has ended when the sequence returns, by
// the end of the range or a break.
func (r *Records) scanAhead(start, end []byte) iter.Seq2[Entry, error] {
	if runtime.GOMAXPROCS(0) < 2 {
		return r.store.Scan(start, end)
	}
	return func(yield func(Entry, error) bool) {
		full := make(chan *aheadBatch, aheadBatches)
		free := make(chan *aheadBatch, aheadBatches)
		stop, done := make(chan struct{}), make(chan struct{})
		for range aheadBatches - 1 {
			free <- new(aheadBatch)
		}
		go func() {
			defer close(done)
			defer close(full)
			b := new(aheadBatch)
			send := func() bool {
				b.seal()
				select {
				case full <- b:
				case <-stop:
					return false
				}
				select {
				case b = <-free:
					b.reset()
					return true
				case <-stop:
					return false
				}
			}
			for e, err := range r.store.Scan(start, end) {
				if err != nil {
					b.err = err
					break
				}
				b.add(e)
				if len(b.offsets) == aheadEntries || len(b.buf) >= aheadBytes {
					if !send() {
						return
					}
				}
			}
			if len(b.offsets) > 0 || b.err != nil {
				send()
			}
		}()
		defer func() {
			close(stop)
			<-done
		}()
		for b := range full {
			for _, e := range b.entries {
				if !yield(e, nil) {
					return
				}
			}
			if b.err != nil {
				yield(Entry{}, b.err)
				return
			}
			free <- b
		}
	}
}
