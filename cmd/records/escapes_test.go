package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/otelrecords/otelrecords/cmd/records/internal/render"
)

// pwned is a file name that, printed as it is, retitles the terminal and
// rings its bell: a store's directory is anyone's, and so are its names.
const pwned = "\x1b]0;pwned\a"

// controlFree fails the test when text holds a control character other
// than a line's end.
func controlFree(t *testing.T, what, text string) {
	t.Helper()
	for _, r := range text {
		if r != '\n' && unicode.IsControl(r) {
			t.Errorf("%s holds %q:\n%q", what, r, text)
			return
		}
	}
}

// TestHostileFileNamesReachNoTerminal puts files named with terminal
// escapes in a store's directory — a log that does not verify, a table, a
// spool file that does not decode — and runs the commands over it: what
// they print on stderr (the error naming the damaged file, the warning
// about the spool file, logged through slog) names the file with its
// escapes removed.
func TestHostileFileNamesReachNoTerminal(t *testing.T) {
	t.Run("damaged log", func(t *testing.T) {
		dir := writeStore(t)
		if err := os.WriteFile(filepath.Join(dir, pwned+".vlog"), []byte(strings.Repeat("x", 64)), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"sessions"}, {"dump"}, {"prune", "--keep", "1"}, {"doctor", "--check"}} {
			code, out, errOut := runCLI(t, append(args, "--dir", dir)...)
			if code == 0 {
				t.Errorf("records %s: exit 0 on a damaged store", args[0])
			}
			controlFree(t, "records "+args[0]+"'s stderr", errOut)
			controlFree(t, "records "+args[0]+"'s stdout", out)
			if args[0] != "doctor" && !strings.Contains(errOut, "]0;pwned.vlog") {
				t.Errorf("records %s: the error does not name the damaged file: %q", args[0], errOut)
			}
		}
	})
	t.Run("table", func(t *testing.T) {
		dir := writeStore(t)
		if err := os.WriteFile(filepath.Join(dir, pwned+".sst"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"sessions"}, {"doctor", "--check"}} {
			_, out, errOut := runCLI(t, append(args, "--dir", dir)...)
			controlFree(t, "records "+args[0]+"'s stderr", errOut)
			controlFree(t, "records "+args[0]+"'s stdout", out)
		}
	})
	t.Run("spool file", func(t *testing.T) {
		dir := writeStore(t)
		spool := filepath.Join(dir, "spool")
		if err := os.MkdirAll(spool, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(spool, pwned+".cbor"), []byte{0xff, 0xff}, 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI(t, "sessions", "--dir", dir)
		if code != 0 {
			t.Fatalf("records sessions: exit %d: %s", code, errOut)
		}
		controlFree(t, "records sessions' stderr", errOut)
		if !strings.Contains(errOut, "records: warning: ") || !strings.Contains(errOut, "]0;pwned.cbor does not decode") {
			t.Errorf("the spool file set aside is not reported on stderr: %q", errOut)
		}
	})
	t.Run("store directory", func(t *testing.T) {
		code, _, errOut := runCLI(t, "sessions", "--dir", filepath.Join(t.TempDir(), pwned))
		if code == 0 {
			t.Fatal("exit 0 without a store")
		}
		controlFree(t, "records sessions' stderr", errOut)
	})
}

// TestStderrLogCleansEveryPart logs through the command's slog handler a
// message, attributes and groups holding escapes and line breaks.
func TestStderrLogCleansEveryPart(t *testing.T) {
	var b strings.Builder
	h := render.NewLog(&b)
	log := slog.New(h).With("file", pwned+".sst").WithGroup(pwned)
	log.Warn("set aside "+pwned+"\nrecords: all is well", pwned, "\x9b31m", "n", 3)
	got := b.String()
	controlFree(t, "the log line", got)
	if strings.Count(got, "\n") != 2 || !strings.HasPrefix(got, "records: warning: set aside ]0;pwned\n  records: all is well") {
		t.Errorf("log line %q", got)
	}
	if want := " file=\"]0;pwned.sst\" \"]0;pwned.]0;pwned\"=\ufffd31m \"]0;pwned.n\"=3"; !strings.Contains(got, want) {
		t.Errorf("log line %q, want its attributes %q", got, want)
	}
}
