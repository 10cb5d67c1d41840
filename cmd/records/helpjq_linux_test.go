package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestHelpJQExamples runs each example of the help that pipes to jq as
// it is printed, through sh, with records on the PATH and the store as
// the default one, and checks it prints what it says: jq 1.6, Debian 12's,
// reads the session ids exactly.
func TestHelpJQExamples(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Skip("jq is not installed (apt-get install jq; .ci/setup-debian installs it for CI): the help's jq examples are not run")
	}
	if v, err := exec.Command(jq, "--version").Output(); err == nil {
		t.Logf("with %s", strings.TrimSpace(string(v)))
	}
	dir := filepath.Join(t.TempDir(), "builds")
	ids := writeBuildStore(t, dir)
	bin := t.TempDir()
	// records on the PATH: this test binary, which is the command when
	// RECORDS_TEST_RUN holds its arguments, a line each.
	script := fmt.Sprintf("#!/bin/sh\n%s=\"$(printf '%%s\\n' \"$@\")\" exec %q -test.run='^$'\n", runEnv, os.Args[0])
	if err := os.WriteFile(filepath.Join(bin, "records"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "OTELRECORDS_DIR="+dir)

	// What each example says it prints, checked on its lines.
	checks := map[string]func(t *testing.T, lines []string){
		"sessions": func(t *testing.T, lines []string) { // the ids of sessions that tuned: both
			if !slices.Equal(lines, ids) {
				t.Errorf("printed %q, want the ids %q", lines, ids)
			}
			for _, id := range lines {
				if out := mustRun(t, "timeline", "--dir", dir, "--session", id); !strings.Contains(out, "session "+id) {
					t.Errorf("timeline --session %s does not find it:\n%s", id, out)
				}
			}
		},
		"dump":     jsonWhere(`"code":"error"`, 2),
		"cost":     jsonWhere(`"table":"redone"`, 2),
		"timeline": jsonWhere(`"depth":0`, 2),
		"watch": func(t *testing.T, lines []string) { // each run's plan and compile, of 2s
			for _, l := range lines {
				var r struct {
					WallNs int64 `json:"wall_ns"`
				}
				if err := json.Unmarshal([]byte(l), &r); err != nil || r.WallNs <= 1e9 {
					t.Errorf("printed %q, not a record of more than a second", l)
				}
			}
			if len(lines) != 4 {
				t.Errorf("printed %d lines, want 4:\n%s", len(lines), strings.Join(lines, "\n"))
			}
		},
		"summary": func(t *testing.T, lines []string) { // each run's label, and its 2s and a little
			if len(lines) != 2 || !regexp.MustCompile(`^models build: 2\.0\d*s$`).MatchString(lines[0]) ||
				!regexp.MustCompile(`^models build: 2\.0\d*s$`).MatchString(lines[1]) {
				t.Errorf("printed %q, want each session's label and duration", lines)
			}
		},
		"why": func(t *testing.T, lines []string) {
			if !slices.Equal(lines, []string{"new", "forgotten"}) {
				t.Errorf("printed %q, want new, forgotten", lines)
			}
		},
	}
	ran := 0
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if !strings.Contains(line, "| jq") {
				continue
			}
			check := checks[c.Name()]
			if check == nil {
				t.Errorf("records %s: no check for its example %q", c.Name(), line)
				continue
			}
			ran++
			t.Run(c.Name(), func(t *testing.T) {
				if c.Name() != "watch" {
					check(t, runHelpExample(t, env, line, nil))
					return
				}
				// watch follows what is written once it watches: the
				// build, into a store not there yet.
				watched := filepath.Join(t.TempDir(), "watched")
				if err := os.Mkdir(watched, 0o700); err != nil {
					t.Fatal(err)
				}
				env := append(slices.Clone(env), "OTELRECORDS_DIR="+watched)
				check(t, runHelpExample(t, env, line, func(stderr *lockedBuffer) {
					waitFor(t, "records watch to wait for the store", func() bool { return strings.Contains(stderr.String(), "waiting for a store") })
					writeBuildStore(t, watched)
				}))
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{}).rootCommand())
	if ran != len(checks) {
		t.Errorf("ran %d examples, want %d: one for each check", ran, len(checks))
	}
}

// jsonWhere checks that an example printed at least n JSON lines, each
// holding want.
func jsonWhere(want string, n int) func(t *testing.T, lines []string) {
	return func(t *testing.T, lines []string) {
		for _, l := range lines {
			if !json.Valid([]byte(l)) || !strings.Contains(l, want) {
				t.Errorf("printed %q, not a JSON line with %s", l, want)
			}
		}
		if len(lines) < n {
			t.Errorf("printed %d lines, want %d:\n%s", len(lines), n, strings.Join(lines, "\n"))
		}
	}
}

// runHelpExample runs a help example through sh and returns the lines it
// printed. With meanwhile, the example follows a store (records watch):
// it runs on a terminal, as a user runs it (jq colours what it prints
// there: the colours are taken out), meanwhile is called once it started,
// and the whole pipeline is interrupted once it has printed 4 lines. Any
// other example must end by itself.
func runHelpExample(t *testing.T, env []string, line string, meanwhile func(stderr *lockedBuffer)) []string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	follows := meanwhile != nil
	errOut := new(lockedBuffer)
	cmd.Stderr = errOut
	var stdout io.Reader
	if follows {
		// On a terminal, as a user runs it: jq writes each line as it
		// comes, where into a pipe it would hold them until it ends.
		controller, terminal := openPTY(t)
		defer controller.Close()
		cmd.Stdout, stdout = terminal, controller
		defer terminal.Close()
	} else {
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout = pipe
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if follows {
		cmd.Stdout.(*os.File).Close() // the terminal is the pipeline's alone: it ends when they end
		meanwhile(errOut)
	}
	timer := time.AfterFunc(time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer timer.Stop()
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() { // on a terminal, the end is an error (EIO) once the pipeline is gone
		lines = append(lines, colours.ReplaceAllString(strings.TrimSuffix(sc.Text(), "\r"), ""))
		if follows && len(lines) == 4 {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		}
	}
	if err := cmd.Wait(); err != nil && !follows {
		t.Errorf("%s: %v\n%s", line, err, errOut.String())
	}
	if follows && len(lines) < 4 {
		t.Errorf("%s printed %q before it was stopped\n%s", line, lines, errOut.String())
	}
	return lines
}

// colours are the escape sequences that colour a terminal's text.
var colours = regexp.MustCompile("\x1b\\[[0-9;]*m")
