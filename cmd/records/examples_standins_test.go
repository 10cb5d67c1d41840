package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/otelrecords/otelrecords/spanbridge"
)

// The backends the examples name, stood in for by servers of the test on
// free ports. The examples name a collector and a Jaeger by placeholder
// host names (collector.example.com, jaeger.example.com: RFC 2606 names,
// which a reader reads as "yours") and by the well-known ports of a local
// Collector and Jaeger (4317, 4318, 16686), which a test must not bind;
// the test gives sh each example line with those addresses replaced by
// its stand-ins' (standIns.replace), and nothing else changed. The
// placeholder hosts speak TLS, as a collector on the network does, with a
// certificate the commands trust through OTEL_EXPORTER_OTLP_CERTIFICATE,
// as a user trusts a private CA; the local ports speak plaintext.
type standIns struct {
	grpcTLS, grpcPlain, httpTLS, httpPlain *receiver
	jaeger                                 *fakeJaeger
	ca                                     string   // the PEM file of the certificate the TLS stand-ins present
	addresses                              []string // what an example names, and the stand-in for it, in pairs
}

// newStandIns starts the stand-ins; the fake Jaeger holds the spans of
// otlpJSON (an ExportTraceServiceRequest in OTLP JSON, as records export
// writes it).
func newStandIns(t *testing.T, otlpJSON []byte) *standIns {
	t.Helper()
	cert, caFile := selfSigned(t)
	tlsConf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s := &standIns{grpcTLS: &receiver{}, grpcPlain: &receiver{}, httpTLS: &receiver{}, httpPlain: &receiver{}, ca: caFile}
	j, err := newFakeJaeger(otlpJSON)
	if err != nil {
		t.Fatal(err)
	}
	s.jaeger = j
	grpcTLS := serveGRPC(t, s.grpcTLS, grpc.Creds(credentials.NewTLS(tlsConf)))
	grpcPlain := serveGRPC(t, s.grpcPlain)
	httpTLS := serveHTTP(t, otlpHTTP(s.httpTLS), tlsConf)
	httpPlain := serveHTTP(t, otlpHTTP(s.httpPlain), nil)
	jaegerTLS := serveHTTP(t, j, tlsConf)
	jaegerPlain := serveHTTP(t, j, nil)
	s.addresses = []string{
		"collector.example.com:4317", grpcTLS,
		"collector.example.com:4318", httpTLS,
		"127.0.0.1:4317", grpcPlain,
		"127.0.0.1:4318", httpPlain,
		"localhost:4318", httpPlain,
		"https://jaeger.example.com", "https://" + jaegerTLS,
		"http://127.0.0.1:16686", "http://" + jaegerPlain,
	}
	return s
}

// pairs returns what an example names and the stand-in for it, in
// pairs, for a strings.Replacer.
func (s *standIns) pairs() []string { return slices.Clone(s.addresses) }

// reset forgets what the receivers were sent.
func (s *standIns) reset() {
	for _, r := range []*receiver{s.grpcTLS, s.grpcPlain, s.httpTLS, s.httpPlain} {
		r.mu.Lock()
		r.spans, r.headers = nil, nil
		r.mu.Unlock()
	}
}

// selfSigned makes the certificate of the TLS stand-ins, for 127.0.0.1,
// and writes it to a PEM file, the CA a client is told to trust.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "stand-in"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file
}

// serveGRPC serves OTLP/gRPC into r on a free port, and returns its
// address.
func serveGRPC(t *testing.T, r *receiver, opts ...grpc.ServerOption) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	collectorpb.RegisterTraceServiceServer(srv, r)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

// serveHTTP serves h on a free port, over TLS when conf is given, and
// returns its address.
func serveHTTP(t *testing.T, h http.Handler, conf *tls.Config) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if conf != nil {
		srv.TLS = conf
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// otlpHTTP is an OTLP/HTTP trace receiver into r: it takes protobuf, as
// the exporters send it, and JSON, as curl does a file of records export.
func otlpHTTP(r *receiver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		msg := &collectorpb.ExportTraceServiceRequest{}
		asJSON := req.Header.Get("Content-Type") == "application/json"
		if err == nil && asJSON {
			msg, err = parseOTLPJSON(body)
		} else if err == nil {
			err = proto.Unmarshal(body, msg)
		}
		if req.URL.Path != "/v1/traces" || err != nil {
			http.Error(w, fmt.Sprintf("bad request: %v", err), http.StatusBadRequest)
			return
		}
		r.add(msg, req.Header.Values("Authorization"))
		if asJSON {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{}")
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Write(out)
	})
}

// parseOTLPJSON decodes OTLP JSON into the OTLP types. OTLP/JSON writes
// ids in hex where the protobuf JSON mapping has base64, so they are
// turned back first; everything else must be the mapping exactly
// (unknown fields are an error).
func parseOTLPJSON(data []byte) (*collectorpb.ExportTraceServiceRequest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	var fix func(any) error
	fix = func(v any) error {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && otlpIDFields[k] {
					b, err := hex.DecodeString(s)
					if err != nil || (len(b) != 16 && len(b) != 8) {
						return fmt.Errorf("%s %q is not a hex id", k, s)
					}
					x[k] = base64.StdEncoding.EncodeToString(b)
				}
				if err := fix(e); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range x {
				if err := fix(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := fix(v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := (protojson.UnmarshalOptions{}).Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("not an ExportTraceServiceRequest: %w", err)
	}
	return &req, nil
}

// sessionSpans returns how many spans r was sent, by the
// records.session.id of their Resource.
func (r *receiver) sessionSpans() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, rs := range r.spans {
		id := attrOf(rs.GetResource().GetAttributes(), "records.session.id")
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				if sp.Name != spanbridge.TallyName { // a session's tally follows its records
					out[id]++
				}
			}
		}
	}
	return out
}

// fakeJaeger answers api_v3 as Jaeger's query service does over its
// memory storage (pull's tests have one in Go spans; this one holds OTLP
// JSON, as records export writes a store): traces found by service and by
// a span's start within [start_time_min, start_time_max], at most
// num_traces, the last received first; "No traces found" with a 404.
type fakeJaeger struct {
	mu     sync.Mutex
	res    []jaegerResource
	traces []string // trace ids, in the order first received
}

// jaegerResource is a ResourceSpans of what the fake holds: its Resource
// and its scopes as they came, and what a query reads of its spans.
type jaegerResource struct {
	resource json.RawMessage
	service  string
	scopes   []jaegerScope
}

type jaegerScope struct {
	scope json.RawMessage
	spans []jaegerSpanJSON
}

type jaegerSpanJSON struct {
	raw   json.RawMessage
	trace string
	start time.Time
}

func newFakeJaeger(otlpJSON []byte) (*fakeJaeger, error) {
	var req struct {
		ResourceSpans []struct {
			Resource   json.RawMessage `json:"resource"`
			ScopeSpans []struct {
				Scope json.RawMessage   `json:"scope"`
				Spans []json.RawMessage `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(otlpJSON, &req); err != nil {
		return nil, err
	}
	j := &fakeJaeger{}
	for _, rs := range req.ResourceSpans {
		var res struct {
			Attributes []struct {
				Key   string `json:"key"`
				Value struct {
					StringValue string `json:"stringValue"`
				} `json:"value"`
			} `json:"attributes"`
		}
		if err := json.Unmarshal(rs.Resource, &res); err != nil {
			return nil, err
		}
		r := jaegerResource{resource: rs.Resource}
		for _, a := range res.Attributes {
			if a.Key == "service.name" {
				r.service = a.Value.StringValue
			}
		}
		for _, ss := range rs.ScopeSpans {
			sc := jaegerScope{scope: ss.Scope}
			for _, raw := range ss.Spans {
				var span struct {
					TraceID string `json:"traceId"`
					Start   string `json:"startTimeUnixNano"`
				}
				if err := json.Unmarshal(raw, &span); err != nil {
					return nil, err
				}
				ns, err := strconv.ParseInt(span.Start, 10, 64)
				if err != nil {
					return nil, err
				}
				sc.spans = append(sc.spans, jaegerSpanJSON{raw: raw, trace: span.TraceID, start: time.Unix(0, ns)})
				if !slices.Contains(j.traces, span.TraceID) {
					j.traces = append(j.traces, span.TraceID)
				}
			}
			r.scopes = append(r.scopes, sc)
		}
		j.res = append(j.res, r)
	}
	if len(j.traces) == 0 {
		return nil, errors.New("no spans for the fake Jaeger")
	}
	return j, nil
}

func (j *fakeJaeger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fail := func(code int, msg string) {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"httpCode": code, "message": msg}})
		http.Error(w, string(b), code)
	}
	switch r.URL.Path {
	case "/api/v3/services":
		var names []string
		for _, res := range j.res {
			if !slices.Contains(names, res.service) {
				names = append(names, res.service)
			}
		}
		slices.Sort(names)
		json.NewEncoder(w).Encode(map[string]any{"services": names})
	case "/api/v3/traces":
		q := r.URL.Query()
		from, err1 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_min"))
		to, err2 := time.Parse(time.RFC3339Nano, q.Get("query.start_time_max"))
		n, err3 := strconv.Atoi(q.Get("query.num_traces"))
		if err1 != nil || err2 != nil || err3 != nil || n <= 0 || q.Get("query.raw_traces") != "true" {
			fail(http.StatusBadRequest, "malformed parameters")
			return
		}
		found := map[string]bool{}
		for _, id := range slices.Backward(j.traces) {
			if len(found) == n {
				break
			}
			for _, res := range j.res {
				for _, sc := range res.scopes {
					for _, s := range sc.spans {
						if s.trace == id && res.service == q.Get("query.service_name") && !s.start.Before(from) && !s.start.After(to) {
							found[id] = true
						}
					}
				}
			}
		}
		if len(found) == 0 {
			fail(http.StatusNotFound, "No traces found")
			return
		}
		type scopeOut struct {
			Scope json.RawMessage   `json:"scope"`
			Spans []json.RawMessage `json:"spans"`
		}
		type resOut struct {
			Resource   json.RawMessage `json:"resource"`
			ScopeSpans []scopeOut      `json:"scopeSpans"`
		}
		var out []resOut
		for _, res := range j.res {
			ro := resOut{Resource: res.resource}
			for _, sc := range res.scopes {
				so := scopeOut{Scope: sc.scope}
				for _, s := range sc.spans {
					if found[s.trace] {
						so.Spans = append(so.Spans, s.raw)
					}
				}
				if len(so.Spans) > 0 {
					ro.ScopeSpans = append(ro.ScopeSpans, so)
				}
			}
			if len(ro.ScopeSpans) > 0 {
				out = append(out, ro)
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"result": map[string]any{"resourceSpans": out}})
	default:
		http.NotFound(w, r)
	}
}
