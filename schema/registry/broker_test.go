package registry_test

import (
	"os"
	"testing"
)

// testBroker returns the address (host:port) of a running broker for the
// integration tests of the _schemas store. It is the only place that knows
// where the broker comes from, so that a test harness starting a real
// Tributary broker can replace it.
func testBroker(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("TRIBUTARY_TEST_BROKER")
	if addr == "" {
		t.Skip("TRIBUTARY_TEST_BROKER is not set: no broker to store _schemas on")
	}
	return addr
}
