package otlpenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clearEnv unsets every variable Read reads, for the test.
func clearEnv(t *testing.T) {
	for _, what := range []string{"ENDPOINT", "HEADERS", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
		t.Setenv(Prefix+what, "")
		t.Setenv(Prefix+"TRACES_"+what, "")
	}
}

func TestHeaders(t *testing.T) {
	for _, tc := range []struct {
		name           string
		general, trace string
		want           map[string]string
		wantErr        string
	}{
		{name: "none"},
		{name: "general", general: "authorization=Bearer%20s3cret, x-tenant = a ", want: map[string]string{"authorization": "Bearer s3cret", "x-tenant": "a"}},
		// The exporters replace the general variable with the trace one
		// whole, rather than merge them.
		{name: "traces replace", general: "a=1,b=2", trace: "b=3", want: map[string]string{"b": "3"}},
		{name: "no equals", general: "a=1,s3cret", wantErr: Prefix + "HEADERS: header 2 is not key=value"},
		{name: "not a token", trace: "Bearer s3cret=x", wantErr: Prefix + "TRACES_HEADERS: header 1 is not key=value"},
		{name: "not escaped", general: "k=s3cret%zz", wantErr: Prefix + "HEADERS: the value of header k is not URL-encoded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(Prefix+"HEADERS", tc.general)
			t.Setenv(Prefix+"TRACES_HEADERS", tc.trace)
			c, err := Read()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows a header's value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(c.Headers, tc.want) {
				t.Errorf("headers %v, want %v", c.Headers, tc.want)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	clearEnv(t)
	if c, err := Read(); err != nil || c.Endpoint != "" {
		t.Fatalf("nothing set: %q, %v", c.Endpoint, err)
	}
	t.Setenv(Prefix+"ENDPOINT", " http://a:4318 ")
	if c, _ := Read(); c.Endpoint != "http://a:4318" {
		t.Errorf("general: %q", c.Endpoint)
	}
	t.Setenv(Prefix+"TRACES_ENDPOINT", "http://b:4318/v1/traces")
	if c, _ := Read(); c.Endpoint != "http://b:4318/v1/traces" {
		t.Errorf("traces: %q", c.Endpoint)
	}
}

// writePair writes a self-signed certificate and its key, PEM, and
// returns their paths.
func writePair(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func TestTLS(t *testing.T) {
	cert, key := writePair(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		env        map[string]string
		ca, client bool
		wantErr    string
	}{
		{name: "none"},
		{name: "ca", env: map[string]string{"CERTIFICATE": cert}, ca: true},
		{name: "traces ca wins", env: map[string]string{"CERTIFICATE": notPEM, "TRACES_CERTIFICATE": cert}, ca: true},
		{name: "ca not pem", env: map[string]string{"CERTIFICATE": notPEM}, wantErr: Prefix + "CERTIFICATE: the CA certificate " + notPEM + " holds no PEM certificate"},
		{name: "ca missing", env: map[string]string{"TRACES_CERTIFICATE": notPEM + ".gone"}, wantErr: Prefix + "TRACES_CERTIFICATE: the CA certificate"},
		{name: "client pair", env: map[string]string{"CLIENT_CERTIFICATE": cert, "CLIENT_KEY": key}, client: true},
		{name: "traces pair", env: map[string]string{"TRACES_CLIENT_CERTIFICATE": cert, "TRACES_CLIENT_KEY": key, "CLIENT_CERTIFICATE": notPEM}, client: true},
		{name: "half a pair", env: map[string]string{"CLIENT_CERTIFICATE": cert}, wantErr: Prefix + "CLIENT_CERTIFICATE is set, and " + Prefix + "CLIENT_KEY is not"},
		{name: "half a traces pair", env: map[string]string{"TRACES_CLIENT_KEY": key, "CLIENT_CERTIFICATE": cert}, wantErr: Prefix + "TRACES_CLIENT_KEY is set, and " + Prefix + "TRACES_CLIENT_CERTIFICATE is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(Prefix+k, v)
			}
			c, err := Read()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c.TLS != nil) != (tc.ca || tc.client) {
				t.Fatalf("TLS %v, want one: %v", c.TLS, tc.ca || tc.client)
			}
			if c.TLS == nil {
				return
			}
			if (c.TLS.RootCAs != nil) != tc.ca || (len(c.TLS.Certificates) == 1) != tc.client {
				t.Errorf("roots %v, %d client certificates; want roots %v, client %v", c.TLS.RootCAs != nil, len(c.TLS.Certificates), tc.ca, tc.client)
			}
		})
	}
}
