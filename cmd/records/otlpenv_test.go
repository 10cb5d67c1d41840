package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Replay and pull read the OTLP environment by one rule (otlpenv): a
// header that does not read stops both before anything is sent, naming
// the variable and never the value, where the OTLP exporter would log
// the value and send without it.
func TestReplayAndPullRefuseOneEnvironment(t *testing.T) {
	dir := recordBuild(t)
	for _, tc := range []struct{ name, value, want string }{
		{"OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer s3cret,Bearer s3cret", "OTEL_EXPORTER_OTLP_HEADERS: header 2 is not key=value"},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-api-key=s3cret%zz", "OTEL_EXPORTER_OTLP_TRACES_HEADERS: the value of header x-api-key is not URL-encoded"},
		{"OTEL_EXPORTER_OTLP_CLIENT_KEY", filepath.Join(t.TempDir(), "key.pem"), "OTEL_EXPORTER_OTLP_CLIENT_KEY is set, and OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			for _, args := range [][]string{
				{"--dir", dir, "replay", "--endpoint", "127.0.0.1:1", "--insecure"},
				{"--dir", filepath.Join(t.TempDir(), "pulled"), "pull", "--from", "http://127.0.0.1:1"},
			} {
				code, out, errOut := runRecords(t, args...)
				if code != exitError || out != "" || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "s3cret") {
					t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", args[2], code, out, errOut, exitError, tc.want)
				}
			}
		})
	}
}
