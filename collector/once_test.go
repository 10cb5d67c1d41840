package collector

// Exactly once through the Collector (issue 31), tested as a sender lives:
// a real Go OTLP client (otlpsender: the SDK's BatchSpanProcessor and
// otlptracehttp/grpc, logging every span id it was told is stored)
// against a real otelcol-records process, killed with SIGKILL and started
// again while it sends, or with its store's file system filled or made
// read-only under it. What the sender was told is stored must be stored,
// once.

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/badgerstore"
	"github.com/otelrecords/otelrecords/sessions"
)

// pipelineConfig is a Collector configuration for the tests: the OTLP
// receiver on %[1]d (HTTP) and %[2]d (gRPC), memory_limiter, the records
// exporter into dir with extra lines of its own, and extensions.
func pipelineConfig(dir, exporterExtra, extensions string) string {
	ext, use := "", ""
	if extensions != "" {
		ext = "extensions:\n" + extensions
		use = "  extensions: [file_storage/queue]\n"
	}
	return fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%%[1]d
      grpc:
        endpoint: 127.0.0.1:%%[2]d
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 512
    spike_limit_mib: 128
%s
exporters:
  records:
    directory: %s
%s
service:
%s  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [memory_limiter]
      exporters: [records]
`, ext, dir, exporterExtra, use)
}

// persistentQueue is the exporter lines and extension of a persistent
// sending queue in queueDir, as config-persistent.yaml has them.
func persistentQueue(queueDir string) (exporterExtra, extensions string) {
	return `    sending_queue:
      storage: file_storage/queue
      num_consumers: 4
      queue_size: 100000
      sizer: items`, fmt.Sprintf(`  file_storage/queue:
    directory: %s
    create_directory: true
`, queueDir)
}

// ports is where a test's Collector listens, the same across its restarts.
type ports struct{ http, grpc int }

func freePorts(t testing.TB) ports { return ports{freePort(t), freePort(t)} }

// startAt starts otelcol-records with cfg (pipelineConfig's) on p and
// waits until it listens on both.
func startAt(t testing.TB, bin, cfg string, p ports) *collectorProc {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, cfg, p.http, p.grpc), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &collectorProc{url: fmt.Sprintf("http://127.0.0.1:%d/v1/traces", p.http), log: &lockedBuffer{}}
	c.cmd = exec.Command(bin, "--config", path)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	waitListen(t, c, p.http)
	waitListen(t, c, p.grpc)
	return c
}

// kill ends the Collector with SIGKILL: nothing of it runs after.
func (p *collectorProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
}

// sender is an otlpsender process and the files it logs to.
type sender struct {
	cmd           *exec.Cmd
	acked, failed string
	out           *lockedBuffer
}

// startSender starts otlpsender with args, logging into dir.
func startSender(t *testing.T, bin, dir string, args ...string) *sender {
	t.Helper()
	s := &sender{acked: filepath.Join(dir, "acked.txt"), failed: filepath.Join(dir, "failed.txt"), out: &lockedBuffer{}}
	s.cmd = exec.Command(bin, append([]string{"-acked", s.acked, "-failed", s.failed}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	return s
}

// wait waits for the sender to end, and returns how many spans it made.
func (s *sender) wait(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("otlpsender: %v\n%s", err, s.out)
	}
	var made int
	for _, line := range strings.Split(s.out.String(), "\n") {
		if n, ok := strings.CutPrefix(line, "made "); ok {
			made, _ = strconv.Atoi(strings.Fields(n)[0])
		}
	}
	return made
}

// ids reads a file of span ids, one "traceid spanid effect" a line: the
// "traceid spanid" of each, and whether it said it changed something.
func ids(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 {
			out[f[0]+" "+f[1]] = f[2] == "changed"
		}
	}
	return out
}

// storedIDs opens the store in dir (read-write: it merges the spool) and
// counts the records of each "traceid spanid", and the sessions.
func storedIDs(t *testing.T, dir string) (map[string]int, []sessions.Session) {
	t.Helper()
	st, err := badgerstore.OpenWait(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rd := sessions.NewRecords(st)
	kinds, err := rd.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, k := range kinds {
		for r, err := range rd.All(k) {
			if err != nil {
				t.Fatal(err)
			}
			out[hex.EncodeToString(r.Record.TraceID[:])+" "+hex.EncodeToString(r.Record.SpanID[:])]++
		}
	}
	var rows []sessions.Session
	for s, err := range rd.Sessions() {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, s)
	}
	return out, rows
}

// onceReport checks that every acknowledged span is stored exactly once
// and no span is stored twice, and logs the figures.
func onceReport(t *testing.T, name string, made int, acked, failed map[string]bool, stored map[string]int) {
	t.Helper()
	lost, twice, failedStored, held := 0, 0, 0, 0
	for id, changed := range acked {
		switch {
		case stored[id] > 0:
		case changed:
			lost++
		default:
			held++ // observed in a session not kept when the Collector died: held in memory
		}
	}
	for id, n := range stored {
		if n > 1 {
			twice++
		}
		if _, ok := acked[id]; failed[id] && !ok {
			failedStored++
		}
	}
	t.Logf("%s: made %d spans, %d acknowledged, %d told failed (%d of those stored once), %d stored; acknowledged changed spans lost: %d; stored twice: %d; acknowledged observed spans not stored (held for sessions not kept, the documented loss): %d",
		name, made, len(acked), len(failed), failedStored, len(stored), lost, twice, held)
	if lost > 0 || twice > 0 {
		t.Errorf("%s: %d acknowledged spans lost, %d stored twice; want 0 and 0", name, lost, twice)
	}
	if len(acked) == 0 {
		t.Errorf("%s: nothing was acknowledged", name)
	}
}

// envDuration reads a duration from the environment — a number of
// seconds, or a Go duration such as 90s — or gives def.
func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second // the variables are named _SECONDS
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	return def
}

// Five SIGKILLs of the Collector while a sender sends 5,000 changed
// spans a second, with the shipped pipeline (no batch processor) and with
// a persistent sending queue: every span the sender was told is stored is
// stored, once. OTELRECORDS_KILL_SECONDS sets how long it sends (default
// 20 s).
func TestKillsLoseNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the kill test runs real processes for 20 s each")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	run := envDuration("OTELRECORDS_KILL_SECONDS", 20*time.Second)
	// The third sends observed spans for half the run, then changed
	// ones: what a kill loses of the observed spans of sessions not kept
	// yet is the documented loss, printed (every observed span comes
	// before its sender's first change, so none of them is a kept
	// session's when acknowledged).
	for _, c := range []struct {
		name, proto  string
		persistent   bool
		changedAfter time.Duration
	}{{"shipped, http", "http", false, 0}, {"persistent queue, grpc", "grpc", true, 0}, {"warm then changed, http", "http", false, run / 2}} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "store")
			extra, ext := "", ""
			if c.persistent {
				extra, ext = persistentQueue(filepath.Join(tmp, "queue"))
			}
			cfg := pipelineConfig(dir, extra, ext)
			p := freePorts(t)
			col := startAt(t, bins["otelcol"], cfg, p)
			endpoint := fmt.Sprintf("127.0.0.1:%d", p.http)
			if c.proto == "grpc" {
				endpoint = fmt.Sprintf("127.0.0.1:%d", p.grpc)
			}
			s := startSender(t, bins["sender"], tmp, "-endpoint", endpoint, "-proto", c.proto, "-senders", "4",
				"-rate", "5000", "-duration", run.String(), "-changed-after", c.changedAfter.String())
			for i := range 5 {
				time.Sleep(run / 6)
				col.kill()
				t.Logf("kill %d at %v", i+1, time.Duration(i+1)*run/6)
				col = startAt(t, bins["otelcol"], cfg, p)
			}
			made := s.wait(t)
			col.stop(t)
			stored, rows := storedIDs(t, dir)
			onceReport(t, c.name, made, ids(t, s.acked), ids(t, s.failed), stored)
			if c.changedAfter == 0 && len(rows) != 4 {
				t.Errorf("%d sessions for 4 senders through 5 restarts, want 4", len(rows))
			}
		})
	}
}
