package broker_test

import (
	"context"
	"testing"

	"github.com/tributary-io/tributary/internal/testenv"
)

// Kafka Connect 4.4's distributed worker runs on Tributary: it creates its
// three internal topics compacted (it refuses to start on config, offset
// or status topics that are not), joins its group and serves its REST API.
// (No connector runs: Apache Kafka's file connectors are not among the
// Maven artifacts the tests fetch.)
func TestKafkaConnectDistributedWorkerStarts(t *testing.T) {
	b := testenv.StartBroker(t)
	testenv.StartKafkaConnect(t, b.Addr, "tributary-connect", nil)
	adm, _ := newAdmin(t, b.Addr)
	for _, topic := range []string{"tributary-connect-configs", "tributary-connect-offsets", "tributary-connect-status"} {
		rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
		if err != nil {
			t.Fatal(err)
		}
		if c := configsByName(t, rcs, topic)["cleanup.policy"]; c.MaybeValue() != "compact" {
			t.Errorf("%s has cleanup.policy=%s, want compact", topic, c.MaybeValue())
		}
	}
}
