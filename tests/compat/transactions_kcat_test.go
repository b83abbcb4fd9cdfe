package compat_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKcatTransactionalProduce: kcat (Debian's librdkafka) produces with a
// transactional.id, committing at its end, and a read_committed kcat
// reads the records back. (Transactions were refused here once: kcat
// then stopped at its first FindCoordinator.)
func TestKcatTransactionalProduce(t *testing.T) {
	testenv.Needs(t, testenv.Kcat)
	if _, err := exec.LookPath(kcatPath); err != nil {
		t.Fatalf("kcat is missing: apt-get install -y kcat (.ci/run installs it)")
	}
	b := testenv.StartBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath, "-P", "-b", b.Addr, "-t", "txn", "-X", "transactional.id=app-1")
	cmd.Stdin = strings.NewReader("one\ntwo\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat produced transactionally with an error: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, kcatPath, "-C", "-b", b.Addr, "-t", "txn", "-e", "-o", "beginning",
		"-X", "isolation.level=read_committed").Output()
	if err != nil {
		t.Fatalf("kcat read_committed: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Fatalf("read_committed kcat read %q, want one and two", got)
	}
}
