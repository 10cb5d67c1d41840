package sender

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// A session is the sender's records.session.id, else its
// service.instance.id, else its whole Resource, in any order.
func TestKeyPrefersTheSessionThenTheInstance(t *testing.T) {
	svc, inst := attribute.String("service.name", "api"), attribute.String("service.instance.id", "i-1")
	sess := spanbridge.SessionIDKey.String("42")
	if got := Key([]attribute.KeyValue{svc, inst, sess}); got != string(spanbridge.SessionIDKey)+"=42" {
		t.Errorf("Key = %q, want the session id's", got)
	}
	if got := Key([]attribute.KeyValue{svc, inst}); got != "service.instance.id=i-1" {
		t.Errorf("Key = %q, want the instance's", got)
	}
	res := []attribute.KeyValue{svc, attribute.Int("process.pid", 7)}
	if a, b := Key(res), Key([]attribute.KeyValue{res[1], res[0]}); a != b || res[0] != svc {
		t.Errorf("Key = %q and %q for one Resource in two orders, or the caller's changed", a, b)
	}
	if Replayed(res) || !Replayed([]attribute.KeyValue{sess}) {
		t.Error("Replayed wrong")
	}
}

// The session row says the sender's pid, OS and architecture, and its
// own label.
func TestProcessAndLabel(t *testing.T) {
	res := []attribute.KeyValue{attribute.Int("process.pid", 7), attribute.String("os.type", "linux"),
		attribute.String("host.arch", "arm64"), spanbridge.SessionLabelKey.String("deploy")}
	if p := Process(res); p.PID != 7 || p.OS != "linux" || p.Arch != "arm64" {
		t.Errorf("Process = %+v", p)
	}
	if l, ok := Label(res); !ok || l != "deploy" {
		t.Errorf("Label = %q, %v", l, ok)
	}
	if _, ok := Label(res[:3]); ok {
		t.Error("a label where the sender gives none")
	}
}
