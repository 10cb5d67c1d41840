package importer

// stopLoop stops the Importer's goroutine: the test drives its rounds
// (tick) itself, on its own clock.
func (im *Importer) stopLoop() { im.halt() }
