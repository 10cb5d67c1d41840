package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
)

// openPTY opens a pseudo-terminal and returns its two ends: what is
// written to the terminal end can be read from the other.
func openPTY(t *testing.T) (controller, terminal *os.File) {
	t.Helper()
	controller, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(controller.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		controller.Close()
		t.Skipf("unlock a pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		controller.Close()
		t.Skipf("name a pseudo-terminal: %v", err)
	}
	terminal, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		controller.Close()
		t.Skipf("open a pseudo-terminal: %v", err)
	}
	return controller, terminal
}

// TestProgressOnTerminal exports with standard error on a real terminal: a
// progress line is drawn, redrawn in place, and cleared at the end.
func TestProgressOnTerminal(t *testing.T) {
	fastProgress(t)
	controller, terminal := openPTY(t)
	defer controller.Close()
	if !render.IsTerminal(terminal) {
		t.Fatal("a pseudo-terminal is not taken for a terminal")
	}
	seen := make(chan []byte)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, controller) // ends with an error once the terminal end closes
		seen <- b.Bytes()
	}()

	const n = 3 * progressCheckEvery
	dir := writeManyRecords(t, n)
	var out bytes.Buffer
	code := run([]string{"export", "--dir", dir, "--format", "chrome"}, &out, terminal)
	terminal.Close()
	got := string(<-seen)
	if code != 0 {
		t.Fatalf("exit %d: %q", code, got)
	}
	for _, want := range []string{
		"\rexport: 4096 records read\x1b[K",
		fmt.Sprintf("\rexport: 8192 of %d records (66%%)\x1b[K", n),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal got %q, which lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("the terminal got %q, which does not end by clearing the line", got)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("progress went to standard output")
	}
}
