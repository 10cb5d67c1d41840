// Package otlpenv reads the OpenTelemetry OTLP exporter's environment
// (OTEL_EXPORTER_OTLP_*) once, for every command that talks to a
// backend: records replay, whose OTLP exporters read the same variables
// themselves, and records pull, whose HTTP client to a Jaeger query
// service has no exporter to read them. Both commands therefore take the
// same headers and certificates, by the same rules, and refuse the same
// mistakes before anything is sent.
//
// The rules are the OTLP exporters' (go.opentelemetry.io/otel/exporters/
// otlp/otlptrace, its envconfig): a trace-specific variable
// (OTEL_EXPORTER_OTLP_TRACES_HEADERS) when it is set, else the general one
// (OTEL_EXPORTER_OTLP_HEADERS), the one replacing the other whole; values
// trimmed of spaces; headers as comma-separated key=value pairs, the value
// URL-encoded. Where the exporters log a value they cannot read and go on
// without it, Read returns an error naming the variable, and never a
// header's value: headers carry API keys.
package otlpenv

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"
	"unicode"
)

// Prefix is how every variable read here begins.
const Prefix = "OTEL_EXPORTER_OTLP_"

// Config is what the environment says about reaching a backend.
type Config struct {
	// Endpoint is OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
	// OTEL_EXPORTER_OTLP_ENDPOINT, as set; "" when neither is. The OTLP
	// exporters read it themselves, with the path rules of their
	// protocol: it is here so a command can tell whether one is given.
	Endpoint string
	// Headers are sent with every request (an API key, say), by name;
	// nil when none is set.
	Headers map[string]string
	// TLS holds the CA certificate that verifies the backend and the
	// client certificate that identifies this process, when the
	// environment names any; nil when it names none (the system's roots).
	TLS *tls.Config
}

// Read reads the environment. An error names the variable at fault, and
// what is wrong with it, and holds no header value.
func Read() (Config, error) {
	var c Config
	c.Endpoint, _ = lookup("ENDPOINT")
	var err error
	if c.Headers, err = headers(); err != nil {
		return Config{}, err
	}
	if c.TLS, err = tlsConfig(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// lookup returns the trace-specific variable's value when it is set, else
// the general one's, trimmed, and the name of the variable it came from.
func lookup(what string) (value, name string) {
	for _, name := range []string{Prefix + "TRACES_" + what, Prefix + what} {
		if v := env(name); v != "" {
			return v, name
		}
	}
	return "", ""
}

// headers reads OTEL_EXPORTER_OTLP_[TRACES_]HEADERS: key=value pairs,
// comma-separated, each value URL-encoded.
func headers() (map[string]string, error) {
	v, name := lookup("HEADERS")
	if v == "" {
		return nil, nil
	}
	h := map[string]string{}
	i := 0
	for pair := range strings.SplitSeq(v, ",") {
		i++
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || !isToken(k) {
			// Neither the pair nor its key is shown: what is not a key
			// may be a secret written without one.
			return nil, fmt.Errorf("%s: header %d is not key=value, a key of letters, digits and -_.!#$%%&'*+^`|~", name, i)
		}
		val, err := url.PathUnescape(val)
		if err != nil {
			return nil, fmt.Errorf("%s: the value of header %s is not URL-encoded", name, clean(k))
		}
		h[k] = strings.TrimSpace(val)
	}
	return h, nil
}

// isToken reports whether k may name an HTTP header (RFC 9110's token),
// as the exporters check it.
func isToken(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if c > unicode.MaxASCII || !(unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

// clean keeps what of s prints on one line: an error message is printed on
// a terminal, and the environment is anyone's.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// tlsConfig reads the CA certificate (OTEL_EXPORTER_OTLP_[TRACES_]
// CERTIFICATE) and the client's: ..._CLIENT_CERTIFICATE and
// ..._CLIENT_KEY, a pair, the trace-specific one when either half of it is
// set, else the general one. Half a pair is refused, where the exporters
// would go on without a client certificate, and be refused by the backend.
func tlsConfig() (*tls.Config, error) {
	ca, caVar := lookup("CERTIFICATE")
	certVar, keyVar := Prefix+"TRACES_CLIENT_CERTIFICATE", Prefix+"TRACES_CLIENT_KEY"
	cert, key := env(certVar), env(keyVar)
	if cert == "" && key == "" {
		certVar, keyVar = Prefix+"CLIENT_CERTIFICATE", Prefix+"CLIENT_KEY"
		cert, key = env(certVar), env(keyVar)
	}
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: the CA certificate: %w", caVar, err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: the CA certificate %s holds no PEM certificate", caVar, clean(ca))
		}
	}
	switch {
	case cert == "" && key != "":
		return nil, fmt.Errorf("%s is set, and %s is not: a client certificate needs both", keyVar, certVar)
	case cert != "" && key == "":
		return nil, fmt.Errorf("%s is set, and %s is not: a client certificate needs both", certVar, keyVar)
	case cert != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s: the client certificate: %w", certVar, err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return conf, nil
}

// env returns the variable's value, trimmed.
func env(name string) string { return strings.TrimSpace(os.Getenv(name)) }
