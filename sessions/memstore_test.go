package sessions_test

import (
	"testing"

	"github.com/otelrecords/otelrecords/sessions"
	"github.com/otelrecords/otelrecords/sessions/sessionstest"
)

func TestMemStore(t *testing.T) {
	sessionstest.TestStore(t, func(*testing.T) sessions.Store { return sessions.NewMemStore() })
}
