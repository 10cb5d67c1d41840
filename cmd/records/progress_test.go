package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// fastProgress makes progress draw from the first record on, for the
// length of a test.
func fastProgress(t *testing.T) {
	t.Helper()
	delay, redraw := progressDelay, progressRedraw
	progressDelay, progressRedraw = 0, 0
	t.Cleanup(func() { progressDelay, progressRedraw = delay, redraw })
}

func TestProgressOnlyOnTerminals(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, out := range map[string]io.Writer{"a buffer": &bytes.Buffer{}, "a pipe": w, "/dev/null": devNull} {
		if p := newProgress(out, "export"); p != nil {
			t.Errorf("progress on %s, which is not a terminal", name)
		}
	}
	// A nil progress does nothing, and does not panic.
	var p *progress
	p.add()
	p.update(5)
	p.setTotal(10)
	p.finish()
}

// TestNoProgressWhenRedirected exports with standard error on a pipe, and
// progress due from the first record: the pipe gets nothing.
func TestNoProgressWhenRedirected(t *testing.T) {
	fastProgress(t)
	dir := writeManyRecords(t, 3*progressCheckEvery)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run([]string{"export", "--dir", dir, "--format", "chrome"}, &out, w); code != 0 {
		t.Fatalf("exit %d", code)
	}
	w.Close()
	got, _ := io.ReadAll(r)
	r.Close()
	if len(got) != 0 {
		t.Errorf("standard error on a pipe got %q", got)
	}
	if out.Len() == 0 {
		t.Error("nothing exported")
	}
}

func TestProgressLine(t *testing.T) {
	fastProgress(t)
	var b bytes.Buffer
	p := &progress{w: &b, what: "report", start: time.Now()}
	for range progressCheckEvery {
		p.add()
	}
	p.setTotal(2 * progressCheckEvery)
	for range progressCheckEvery {
		p.add()
	}
	p.finish()
	want := "\rreport: 4096 records read\x1b[K" +
		"\rreport: 4096 of 8192 records (50%)\x1b[K" +
		"\r\x1b[K"
	if got := b.String(); got != want {
		t.Errorf("progress wrote %q, want %q", got, want)
	}
	// Before the delay, nothing.
	progressDelay = time.Hour
	b.Reset()
	p = &progress{w: &b, what: "export", start: time.Now()}
	for range 3 * progressCheckEvery {
		p.add()
	}
	p.finish()
	if b.Len() != 0 || strings.Contains(b.String(), "export") {
		t.Errorf("progress drew %q before its delay", b.String())
	}
}
