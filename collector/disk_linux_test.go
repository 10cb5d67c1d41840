package collector

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size at dir and unmounts it at cleanup; it
// skips the test where that is not allowed (not root).
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (this test needs root): %v: %s", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
}

func remount(t *testing.T, dir, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput(); err != nil {
		t.Fatalf("remount %s %s: %v: %s", dir, opts, err, out)
	}
}

// A store failure for a while — the file system filled to its last byte
// by another process (dd), or remounted read-only — under a sender of
// 2,000 changed spans a second whose exporter retries, over HTTP and
// gRPC: every span the sender was told is stored is stored once, spans
// told "failed" are stored once or not at all, no process crashes, and
// writing resumes when the file system takes writes again.
// OTELRECORDS_DISK_SECONDS sets how long the store fails (default 15 s).
func TestStoreFailureUnderRetriesStoresOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs real processes for half a minute each")
	}
	bins, err := tools()
	if err != nil {
		t.Fatal(err)
	}
	outage := envDuration("OTELRECORDS_DISK_SECONDS", 15*time.Second)
	// (A tmpfs cannot be remounted read-only while Badger holds its files
	// open for writing: the kernel says the mount is busy. The Importer's
	// tests refuse writes the read-only way through a store of theirs.)
	for _, c := range []struct{ name, proto, failure string }{
		{"disk full, http", "http", "full"},
		{"disk full, grpc", "grpc", "full"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			fs := filepath.Join(tmp, "fs")
			mountTmpfs(t, fs, "256m")
			dir := filepath.Join(fs, "store")
			p := freePorts(t)
			col := startAt(t, bins["otelcol"], pipelineConfig(dir, "", ""), p)
			endpoint := fmt.Sprintf("127.0.0.1:%d", p.http)
			if c.proto == "grpc" {
				endpoint = fmt.Sprintf("127.0.0.1:%d", p.grpc)
			}
			run := outage + 20*time.Second
			s := startSender(t, bins["sender"], tmp, "-endpoint", endpoint, "-proto", c.proto, "-senders", "2",
				"-rate", "2000", "-duration", run.String())
			time.Sleep(5 * time.Second)
			filler := filepath.Join(fs, "filler")
			switch c.failure {
			case "full":
				// Another process fills the file system to its last byte.
				out, _ := exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=1M").CombinedOutput()
				t.Logf("dd: %s", bytes.TrimSpace(out))
			case "ro":
				remount(t, fs, "ro")
			}
			time.Sleep(outage)
			switch c.failure {
			case "full":
				if err := os.Remove(filler); err != nil {
					t.Fatal(err)
				}
			case "ro":
				remount(t, fs, "rw")
			}
			made := s.wait(t)
			if col.cmd.ProcessState != nil {
				t.Fatalf("the Collector ended during the test:\n%s", col.log)
			}
			col.stop(t)
			stored, _ := storedIDs(t, dir)
			onceReport(t, c.name, made, ids(t, s.acked), ids(t, s.failed), stored)
		})
	}
}
