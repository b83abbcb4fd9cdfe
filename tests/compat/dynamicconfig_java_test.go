package compat_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Kafka's kafka-configs sets and reads the cluster-wide default and a
// broker's own value as it does against Kafka.
func TestKafkaConfigsDynamicBrokerConfigs(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	adm, _ := brokertest.NewAdmin(t, b.Addr)
	brokertest.CreateTopic(t, b.Addr, "tools-dyn", 1, nil)
	run := func(args ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: testenv.KafkaConfigs, Args: append([]string{"--bootstrap-server", b.Addr, "--entity-type", "brokers"}, args...)}
	}
	res := testenv.RunKafkaTools(t,
		run("--entity-default", "--alter", "--add-config", "log.retention.ms=5400000,log.segment.bytes=2097152"),
		run("--entity-default", "--describe"),
		run("--entity-name", "0", "--alter", "--add-config", "log.segment.bytes=4194304"),
		run("--entity-name", "0", "--describe"),
		run("--entity-default", "--alter", "--delete-config", "log.segment.bytes"),
		run("--entity-default", "--alter", "--add-config", "log.dirs=/elsewhere"),
	)
	for i, r := range res[:5] {
		if r.Exit != 0 {
			t.Errorf("run %d: %s", i, r)
		}
	}
	if out := res[1].Stdout; !strings.Contains(out, "log.retention.ms=5400000") || !strings.Contains(out, "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5400000") {
		t.Errorf("--entity-default --describe does not show the default:\n%s", res[1])
	}
	if out := res[3].Stdout; !strings.Contains(out, "log.segment.bytes=4194304") || strings.Contains(out, "log.retention.ms=") {
		t.Errorf("--entity-name 0 --describe shows other than the broker's own value:\n%s", res[3])
	}
	if r := res[5]; r.Exit == 0 || !strings.Contains(r.Stdout+r.Stderr, "log.dirs") {
		t.Errorf("a static key was accepted or refused without naming it:\n%s", r)
	}
	brokertest.WantConfig(t, "topic after kafka-configs", brokertest.TopicConfig(t, adm, "tools-dyn", "retention.ms"), "5400000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	brokertest.WantConfig(t, "topic after kafka-configs", brokertest.TopicConfig(t, adm, "tools-dyn", "segment.bytes"), "4194304", kmsg.ConfigSourceDynamicBrokerConfig)
	if _, ok := brokertest.BrokerConfigs(t, adm)["log.segment.bytes"]; ok {
		t.Error("--delete-config left log.segment.bytes in the default")
	}
}
