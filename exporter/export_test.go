package exporter

// StampsHeld returns how many spans hold a stamp: started through the
// exporter, not yet ended through it.
func (e *Exporter) StampsHeld() int {
	n := 0
	for i := range e.stamps.shards {
		sh := &e.stamps.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// OnProvider reports whether Register has the exporter on its provider now.
func (e *Exporter) OnProvider() bool {
	e.registration.mu.Lock()
	defer e.registration.mu.Unlock()
	return e.registration.on != nil
}

// Storing tells the exporter that the store took entries of a write in
// progress, as badgerstore.WithWriteProgress does for its own store.
func (e *Exporter) Storing(entries int) { e.storing(entries) }

// Stored returns how many entries the store has said it took.
func (e *Exporter) Stored() int64 { return e.stored.Load() }
