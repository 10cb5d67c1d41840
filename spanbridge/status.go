package spanbridge

import (
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/sessions"
)

// The codes of a stored sessions.Status. A span whose status was never set
// stores none (the empty code), which readers show as "unset".
const (
	// StatusOK is the code of a span whose status was set to ok: a caller
	// that said the work succeeded. It keeps no description.
	StatusOK = "ok"
	// StatusError is the code of a span whose status was set to error; the
	// description stored with it says what failed.
	StatusError = "error"
)

// recordStatus is a span's status as a record stores it. Only an error
// keeps its description: OpenTelemetry drops the others.
func recordStatus(st sdktrace.Status) sessions.Status {
	switch st.Code {
	case codes.Error:
		return sessions.Status{Code: StatusError, Description: st.Description}
	case codes.Ok:
		return sessions.Status{Code: StatusOK}
	}
	return sessions.Status{}
}

// spanStatus is a stored status as a span's again: the inverse of
// recordStatus. A code it does not know is unset.
func spanStatus(s sessions.Status) sdktrace.Status {
	switch s.Code {
	case StatusError:
		return sdktrace.Status{Code: codes.Error, Description: s.Description}
	case StatusOK:
		return sdktrace.Status{Code: codes.Ok}
	}
	return sdktrace.Status{Code: codes.Unset}
}
