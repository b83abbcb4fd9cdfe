package registry_test

import (
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

// testBroker starts a real Tributary broker for the integration tests of
// the _schemas store and returns its address. It is the only place that
// knows where the broker comes from.
func testBroker(t *testing.T) string {
	t.Helper()
	return testenv.StartBroker(t).Addr
}
