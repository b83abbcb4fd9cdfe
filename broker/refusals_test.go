package broker_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Apache Kafka's own transactional producer (ProducerPerformance with a
// transactional id, committing every 100 ms) runs to the end against
// Tributary, a read_committed consumer reads every record it sent, and
// kafka-transactions lists and describes the transactional id.
// (Transactions were refused here once: Java then read our refusal as an
// ACL problem.)
func TestJavaTransactionalProducerPerformance(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "java-txn", 2, nil)
	res := testenv.RunKafkaTools(t,
		testenv.KafkaToolRun{Class: "org.apache.kafka.tools.ProducerPerformance", Args: []string{
			"--topic", "java-txn", "--num-records", "3000", "--record-size", "10", "--throughput", "-1",
			"--transactional-id", "app-1", "--transaction-duration-ms", "100",
			"--producer-props", "bootstrap.servers=" + b.Addr, "max.block.ms=20000"}},
	)
	if r := res[0]; r.Exit != 0 || !strings.Contains(r.Stdout, "3000 records sent") {
		t.Fatalf("the transactional producer failed:\n%v", r)
	}
	if got := consumeIsolated(t, b.Addr, "java-txn", kgo.ReadCommitted(), 3000); len(got) != 3000 {
		t.Fatalf("read_committed read %d records, want 3000", len(got))
	}
	// kafka-transactions list and describe.
	res = testenv.RunKafkaTools(t,
		testenv.KafkaToolRun{Class: "org.apache.kafka.tools.TransactionsCommand", Args: []string{"--bootstrap-server", b.Addr, "list"}},
		testenv.KafkaToolRun{Class: "org.apache.kafka.tools.TransactionsCommand", Args: []string{"--bootstrap-server", b.Addr, "describe", "--transactional-id", "app-1"}},
	)
	for _, r := range res {
		if r.Exit != 0 || !strings.Contains(r.Stdout, "app-1") || !strings.Contains(r.Stdout, "CompleteCommit") {
			t.Errorf("kafka-transactions %s:\n%v", r.Run.Args[2], r)
		}
	}
}
