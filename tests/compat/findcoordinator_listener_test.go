package compat_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// FindCoordinator answers with the coordinator's address on the listener
// the client came in on, as Metadata does. With SASL_PLAINTEXT beside
// PLAINTEXT, `kcat -G` over SASL was sent to the PLAINTEXT port and failed
// with "All broker connections are down"; a PLAINTEXT client beside it
// must still be sent to its own port.
func TestFindCoordinatorAnswersOnTheClientsListener(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	if _, err := exec.LookPath(kcatPath); err != nil {
		t.Fatalf("kcat is missing: apt-get install -y kcat (.ci/run installs it)")
	}
	dir := t.TempDir()
	brokertest.SetUser(t, dir, "alice", "SCRAM-SHA-512", "alice-secret")
	_, addrs := brokertest.StartListeners(t, func(c *broker.Config) { c.DataDir = dir }, broker.SASLPlaintext, broker.Plaintext)
	conf := filepath.Join(t.TempDir(), "sasl.conf")
	if err := os.WriteFile(conf, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=alice\nsasl.password=alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kcat := func(stdin string, args ...string) string {
		t.Helper()
		return runKcat(t, 30*time.Second, stdin, args...)
	}
	sasl := []string{"-F", conf, "-b", addrs[broker.SASLPlaintext]}
	kcat("one\ntwo\nthree\n", append(sasl, "-P", "-t", "listeners")...)
	group := func(base []string, name string) []string {
		return append(base, "-G", name, "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", "%s\n", "listeners")
	}
	if got := kcat("", group(sasl, "over-sasl")...); got != "one\ntwo\nthree\n" {
		t.Fatalf("kcat -G over SASL_PLAINTEXT read %q", got)
	}
	if got := kcat("", group([]string{"-b", addrs[broker.Plaintext]}, "over-plaintext")...); got != "one\ntwo\nthree\n" {
		t.Fatalf("kcat -G over PLAINTEXT read %q", got)
	}
}
