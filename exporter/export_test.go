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
