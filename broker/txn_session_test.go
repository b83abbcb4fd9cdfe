package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/internal/testenv"
)

// kgo's GroupTransactSession copies a topic exactly once.
func TestGroupTransactSessionCopiesOnce(t *testing.T) {
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "ctp-in", 3, nil)
	createTopic(t, b.Addr, "ctp-out", 3, nil)
	produceValues(t, b.Addr, "ctp-in", 0, 2000)
	tr := startTransformer(t, b.Addr, "ctp-in", "ctp-out")
	checkCopiedOnce(t, b.Addr, "ctp-out", 2000, tr)
	var sum int64
	committed(t, b.Addr, "transformer").Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != 2000 {
		t.Fatalf("the group committed offsets summing to %d, want 2000", sum)
	}
}
