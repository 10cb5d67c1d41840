package exporter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/otelrecords/otelrecords/internal/write/recorder"
	"github.com/otelrecords/otelrecords/internal/write/sharedstore"
	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/spanbridge"
)

// The Resource attributes that say which process sent a span, and
// describe it in its session row (OpenTelemetry's semantic conventions).
const (
	instanceIDKey = attribute.Key("service.instance.id")
	pidKey        = attribute.Key("process.pid")
	osTypeKey     = attribute.Key("os.type")
	hostArchKey   = attribute.Key("host.arch")
)

// remoteSession is the session of one sender process: its Recorder, the
// traces it holds for their roots, and the decisions it remembers.
type remoteSession struct {
	rec       *recorder.Recorder
	last      time.Time // when its last span arrived
	traces    map[trace.TraceID]*heldTrace
	decisions map[trace.TraceID]*decision
	order     []trace.TraceID // decisions, oldest first, to forget them in order
	problems  int64           // spans refused or mapped with a problem
	cut       int64           // spans the sender's limits cut
}

// sessionKey says which session a Resource's spans belong to: the
// sender's records.session.id, else its service.instance.id, else the
// Resource as a whole (process.pid among it, when the sender says it).
func sessionKey(res []attribute.KeyValue) string {
	for _, k := range []attribute.Key{spanbridge.SessionIDKey, instanceIDKey} {
		for _, kv := range res {
			if kv.Key == k && kv.Value.Emit() != "" {
				return string(k) + "=" + kv.Value.Emit()
			}
		}
	}
	set := attribute.NewSet(res...)
	return "resource:" + set.Encoded(attribute.DefaultEncoder())
}

// senderProcess is what a session row says of the sender: its pid, OS and
// architecture from its Resource; zero values where it says nothing.
func senderProcess(res []attribute.KeyValue) *recorder.Process {
	p := &recorder.Process{}
	for _, kv := range res {
		switch kv.Key {
		case pidKey:
			if kv.Value.Type() == attribute.INT64 {
				p.PID = int(kv.Value.AsInt64())
			}
		case osTypeKey:
			p.OS = kv.Value.Emit()
		case hostArchKey:
			p.Arch = kv.Value.Emit()
		}
	}
	return p
}

// session returns the session a batch with Resource res belongs to,
// starting it if it is new (and, past MaxSessions, ending the session
// quiet longest to make room). It returns nil only after Shutdown.
func (im *Importer) session(res []attribute.KeyValue, now time.Time) *remoteSession {
	key := sessionKey(res)
	if rs, ok := im.sessions[key]; ok {
		rs.last = now
		return rs
	}
	if len(im.sessions) >= im.cfg.MaxSessions {
		im.endQuietest()
	}
	cfg := im.opts.recorderConfig()
	cfg.Report, cfg.IDs, cfg.Process, cfg.Resource = im.reports.once, im.ids, senderProcess(res), spanbridge.Attrs(res)
	// The sender's own label wins over the Importer's: it knows what it
	// is doing.
	for _, kv := range res {
		if kv.Key == spanbridge.SessionLabelKey {
			cfg.Label = kv.Value.Emit()
		}
	}
	rs := &remoteSession{last: now, traces: make(map[trace.TraceID]*heldTrace), decisions: make(map[trace.TraceID]*decision)}
	rs.rec = recorder.New(cfg, im.open, im.now)
	im.sessions[key] = rs
	return rs
}

// open gives a session's Recorder the store: the one writer every session
// shares, which only the Importer closes.
func (im *Importer) open() (sessions.Store, error) {
	if im.writer != nil {
		return sharedSession{im.writer}, nil
	}
	return storeSession{im.opts.store}, nil
}

// sharedSession is the store writer as one session's Recorder sees it:
// ending the session does not close it.
type sharedSession struct{ *sharedstore.Writer }

// Close does nothing: the Importer closes the writer at Shutdown.
func (sharedSession) Close() error { return nil }

// CloseContext does nothing: the Importer closes the writer at Shutdown.
func (sharedSession) CloseContext(context.Context) error { return nil }

// storeSession is a store given with WithStore as one session's Recorder
// sees it: the caller owns it, and closes it.
type storeSession struct{ sessions.Store }

// Close does nothing: the store is the caller's.
func (storeSession) Close() error { return nil }

// end ends the session key: its held traces are decided, what it keeps is
// written (or spooled, if another process holds the store past ctx), and
// its Recorder closed. What it counted joins the Importer's totals.
func (im *Importer) end(ctx context.Context, key string, rs *remoteSession) error {
	for _, id := range rs.dueTraces(func(*heldTrace) bool { return true }) {
		im.decide(rs, id)
	}
	err := rs.rec.Close(ctx)
	addStats(&im.ended, rs.stats())
	delete(im.sessions, key)
	return err
}

// endQuietest ends the session whose last span is oldest, without
// waiting for a busy store (the store spools what it cannot take).
func (im *Importer) endQuietest() {
	var key string
	var quiet *remoteSession
	for k, rs := range im.sessions {
		if quiet == nil || rs.last.Before(quiet.last) {
			key, quiet = k, rs
		}
	}
	if quiet != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		im.handle("end", im.end(ctx, key, quiet))
	}
}

// stats is what the session counted, as the SpanProcessor's Stats.
func (rs *remoteSession) stats() Stats {
	s := recorderStats(rs.rec.Stats())
	s.Problems, s.AttributesDropped = rs.problems, rs.cut
	return s
}

// reporter hands otel.Handle each class of problem once.
type reporter struct {
	seen sync.Map
}

// once reports err the first time its class occurs.
func (r *reporter) once(class string, err error) {
	if err == nil {
		return
	}
	if _, seen := r.seen.LoadOrStore(class, struct{}{}); !seen {
		otel.Handle(fmt.Errorf("%w (reported once; later ones are counted in Stats)", err))
	}
}
