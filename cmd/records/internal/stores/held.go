package stores

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
	"github.com/otelrecords/otelrecords/internal/store/turns"
	"github.com/otelrecords/otelrecords/sessions"
)

// Holding stores open between reads.
const (
	// heldCheck is how often a held store's waiting marker is read: a
	// writer that asks for the store gets it within about this long of a
	// read ending.
	heldCheck = 100 * time.Millisecond
	// HeldIdle is how long stores no read has used stay open.
	HeldIdle = time.Minute
)

// A Store is one of the stores a read reads, and its name.
type Store struct {
	// Dir is the directory --dir gave for it.
	Dir string
	// Records reads this store alone.
	Records *sessions.Records
}

// Held keeps the stores --dir names open read-only between reads, for a
// program that reads them again and again (records serve): opening a
// store of gigabytes checks its logs, which takes most of a second. It
// holds no writer up for long: a store is let go as soon as no read is
// under way and a writer (or any other opener) asks for it, as a writer
// lets its store go (internal/store/turns), and after HeldIdle unused;
// the next read opens it again, waiting as Read does. A store a writer
// held is read as it stands once the writer lets go, so a held reader
// never shows less than a fresh one would. One read runs at a time: each
// takes the memory a view takes, and no more.
type Held struct {
	d   Dirs
	log io.Writer

	turn chan struct{} // holds a token while a read, or a release, runs

	// Under turn:
	open     []*badgerstore.Store
	names    []string
	all      *sessions.Records
	each     []Store
	since    time.Time // when open was opened
	lastUsed time.Time

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Hold returns stores that Read opens when first asked, and keeps open;
// log is told what a command would print on stderr (a store waited for,
// left out, or values skipped). Close lets them go.
func (d *Dirs) Hold(log io.Writer) *Held {
	h := &Held{d: *d, log: &lockedWriter{w: log}, turn: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go h.letGo()
	return h
}

// Read hands fn a reader of every store as one (all), and of each
// store alone (each, in --dir order: to say which store holds a
// session), opening them first if they are not open; a nil fn opens
// them only. It waits for the
// reads before it, and for a busy store as Read does, until ctx ends.
func (h *Held) Read(ctx context.Context, fn func(all *sessions.Records, each []Store) error) error {
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.turn }()
	if h.all == nil {
		if err := h.openAll(ctx); err != nil {
			return err
		}
	}
	h.lastUsed = time.Now()
	if fn == nil {
		return nil
	}
	before := h.all.Skipped()
	err := fn(h.all, h.each)
	one := "" // the store the skipped values are in, where only one is held
	if len(h.each) == 1 {
		one = h.each[0].Dir
	}
	reportSkipped(h.log, one, h.all.Skipped()-before)
	return err
}

// openAll opens every store --dir names, naming on the log each one it
// could not open, and reading the others; it fails when none opens.
func (h *Held) openAll(ctx context.Context) error {
	dirs, err := h.d.List()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.d.Wait)
	defer cancel()
	opened := make([]*badgerstore.Store, len(dirs))
	failed := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() { opened[i], failed[i] = openReader(ctx, h.log, dir) })
	}
	wg.Wait()
	var stores []sessions.Store
	for i, dir := range dirs {
		if failed[i] != nil {
			if len(dirs) == 1 {
				return OpenError(dir, failed[i])
			}
			fmt.Fprintf(h.log, "records: warning: left out: %s\n", render.CleanMessage(OpenError(dir, failed[i]).Error()))
			continue
		}
		st := opened[i]
		reportUnmerged(h.log, dir, st.Unmerged())
		h.open, h.names = append(h.open, st), append(h.names, dir)
		h.each = append(h.each, Store{Dir: dir, Records: sessions.NewRecords(st)})
		stores = append(stores, st)
	}
	if len(stores) == 0 {
		return fmt.Errorf("none of the %d stores --dir names could be read", len(dirs))
	}
	if len(stores) == 1 {
		h.all = h.each[0].Records
	} else {
		names := h.names
		h.all = sessions.NewRecords(sessions.Union(stores, func(i int, err error) {
			fmt.Fprintf(h.log, "records: warning: the store at %s failed while read: %s\n",
				render.CleanMessage(names[i]), render.CleanMessage(err.Error()))
		}))
	}
	h.since = time.Now()
	return nil
}

// closeAll lets every open store go; call it holding the turn.
func (h *Held) closeAll() error {
	var errs []error
	for i, st := range h.open {
		if err := st.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the store at %s: %w", h.names[i], err))
		}
	}
	h.open, h.names, h.each, h.all = nil, nil, nil, nil
	return errors.Join(errs...)
}

// letGo lets the stores go when a writer asks for one of them, or when
// they have not been read for HeldIdle, whenever no read is under way.
func (h *Held) letGo() {
	defer close(h.done)
	tick := time.NewTicker(heldCheck)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
		}
		select {
		case h.turn <- struct{}{}:
		default:
			continue // a read is under way: look again after it
		}
		if h.all != nil && (time.Since(h.lastUsed) > HeldIdle || h.asked()) {
			if err := h.closeAll(); err != nil {
				fmt.Fprintf(h.log, "records: warning: %s\n", render.CleanMessage(err.Error()))
			}
		}
		<-h.turn
	}
}

// asked reports whether another process asked for one of the open
// stores since they were opened.
func (h *Held) asked() bool {
	for _, st := range h.open {
		if turns.Asked(st.Path(), turns.ReaderToken(), h.since) {
			return true
		}
	}
	return false
}

// Close lets the stores go, after the read under way.
func (h *Held) Close() error {
	h.once.Do(func() { close(h.stop) })
	<-h.done
	h.turn <- struct{}{}
	defer func() { <-h.turn }()
	return h.closeAll()
}
