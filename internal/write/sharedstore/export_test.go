package sharedstore

import "time"

// SetIdleRelease sets how long w keeps the store open after its last use;
// call it before w is used.
func (w *Writer) SetIdleRelease(d time.Duration) {
	w.mu.Lock()
	w.idle = d
	w.mu.Unlock()
}
