package main_test

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

// `tributary quotas` sets, describes and deletes quotas on a standalone
// broker whose only listener is SASL_PLAINTEXT with ACLs enforced: the
// super user may, a user without ALTER_CONFIGS on the cluster is refused
// with the broker's reason.
func TestQuotasCLI(t *testing.T) {
	testenv.Needs(t, testenv.Tributary)
	_, as := startSASLStandalone(t, "bob")
	quotas := func(want int, user string, args ...string) string {
		t.Helper()
		return testenv.Run(t, "", want, append(args, as(user)...)...)
	}

	quotas(0, "admin", "quotas", "set", "--user", "alice", "--producer-byte-rate", "1048576", "--consumer-byte-rate", "2097152")
	quotas(0, "admin", "quotas", "set", "--default-client", "--producer-byte-rate", "262144")
	quotas(0, "admin", "quotas", "set", "--user", "alice", "--client-id", "loader", "--consumer-byte-rate", "4096")
	out := quotas(0, "admin", "quotas", "describe")
	for _, want := range []string{
		"user=alice  ", "producer_byte_rate=1048576", "consumer_byte_rate=2097152",
		"client-id=<default>", "producer_byte_rate=262144",
		"user=alice client-id=loader", "consumer_byte_rate=4096",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("quotas describe lacks %q:\n%s", want, out)
		}
	}
	if out := quotas(0, "admin", "quotas", "describe", "--default-client"); strings.Contains(out, "alice") || !strings.Contains(out, "262144") {
		t.Fatalf("quotas describe --default-client:\n%s", out)
	}

	if stderr := testenv.RunStderr(t, 1, append([]string{"quotas", "set", "--user", "bob", "--producer-byte-rate", "1"}, as("bob")...)...); !strings.Contains(stderr, "ALTER_CONFIGS") {
		t.Fatalf("quotas set by a user without ALTER_CONFIGS: want the broker's reason, got\n%s", stderr)
	}
	if stderr := testenv.RunStderr(t, 1, append([]string{"quotas", "set", "--user", "bob"}, as("admin")...)...); !strings.Contains(stderr, "--producer-byte-rate") {
		t.Fatalf("quotas set without a rate: want the missing flag named, got\n%s", stderr)
	}

	quotas(0, "admin", "quotas", "delete", "--user", "alice")
	quotas(0, "admin", "quotas", "delete", "--user", "alice", "--client-id", "loader", "--consumer-byte-rate", "0")
	out = quotas(0, "admin", "quotas", "describe")
	if strings.Contains(out, "alice") || !strings.Contains(out, "client-id=<default>") {
		t.Fatalf("after deleting alice's quotas, describe shows:\n%s", out)
	}
}
