package compat_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKcatTransactionsFailAtOnce: librdkafka's init_transactions must stop
// at its first FindCoordinator with Tributary's reason, not retry until its
// own timeout ends it with a vague "timed out".
func TestKcatTransactionsFailAtOnce(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	if _, err := exec.LookPath(kcatPath); err != nil {
		t.Fatalf("kcat is missing: apt-get install -y kcat (.ci/run installs it)")
	}
	b := testenv.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath, "-P", "-b", b.Addr, "-t", "txn", "-X", "transactional.id=app-1")
	cmd.Stdin = strings.NewReader("one\n")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kcat produced transactionally without an error:\n%s", out)
	}
	for _, want := range []string{"Transactional Id authorization failed", "does not support Kafka transactions"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kcat output lacks %q:\n%s", want, out)
		}
	}
}
