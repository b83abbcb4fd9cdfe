package system_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// The broker process is killed with SIGKILL (kill -9) several times while
// a GroupTransactSession copies a topic, and restarted on its data: every
// record is copied exactly once (no transaction half seen, none lost, no
// offset committed without its output or output without its offset).
func TestGroupTransactSessionSurvivesBrokerKill(t *testing.T) {
	dataDir, addr := t.TempDir(), testenv.FreeAddr(t)
	proc := brokertest.StartStandalone(t, dataDir, addr)
	brokertest.CreateTopic(t, addr, "kill-in", 3, nil)
	brokertest.CreateTopic(t, addr, "kill-out", 3, nil)
	const n = 6000
	brokertest.ProduceValues(t, addr, "kill-in", 0, n)
	tr := brokertest.StartTransformer(t, addr, "kill-in", "kill-out")
	for kill := range 3 {
		target := tr.Commits() + 5
		testenv.Eventuallyf(t, 60*time.Second, func() (bool, string) {
			return tr.Commits() >= target, fmt.Sprintf("kill %d: %d commits, want %d; last errors %q", kill, tr.Commits(), target, tr.LastErrors())
		})
		proc.Kill()
		proc = brokertest.StartStandalone(t, dataDir, addr)
	}
	brokertest.CheckCopiedOnce(t, addr, "kill-out", n, tr)
}
