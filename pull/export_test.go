package pull

// SetPutBatch makes a pull write n records at a time until restore is
// called, so that a test can put a write between two reads of one span.
func SetPutBatch(n int) (restore func()) {
	old := putBatch
	putBatch = n
	return func() { putBatch = old }
}

// SetMaxPage bounds the page of a query to n traces until restore is
// called, so that a test reaches the bound with small answers.
func SetMaxPage(n int) (restore func()) {
	old := maxPageTraces
	maxPageTraces = n
	return func() { maxPageTraces = old }
}

// SetCaches makes what a pull remembers of sessions' rows, and of the
// sessions it staged, hold n sessions until restore is called, so that a
// test reads what it forgot again.
func SetCaches(n int) (restore func()) {
	rows, staged := maxRowsKnown, maxStagedKnown
	maxRowsKnown, maxStagedKnown = n, n
	return func() { maxRowsKnown, maxStagedKnown = rows, staged }
}
