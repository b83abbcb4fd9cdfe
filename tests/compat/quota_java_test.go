package compat_test

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// TestKafkaConfigsClientQuotas: Apache Kafka's kafka-configs sets and
// describes user and client-id quotas on Tributary.
func TestKafkaConfigsClientQuotas(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	bs := []string{"--bootstrap-server", b.Addr}
	run := func(args ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: testenv.KafkaConfigs, Args: append(append([]string{}, bs...), args...)}
	}
	results := testenv.RunKafkaTools(t,
		run("--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152"),
		run("--alter", "--entity-type", "clients", "--entity-default", "--add-config", "producer_byte_rate=4096"),
		run("--describe", "--entity-type", "users", "--entity-name", "alice"),
		run("--describe", "--entity-type", "clients", "--entity-default"),
		run("--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "consumer_byte_rate"),
		run("--describe", "--entity-type", "users", "--entity-name", "alice"),
	)
	for _, r := range results {
		if r.Exit != 0 {
			t.Errorf("%v", r)
		}
	}
	wantIn := func(i int, subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(results[i].Stdout, s) {
				t.Errorf("output of run %d lacks %q:\n%v", i, s, results[i])
			}
		}
	}
	wantIn(2, "producer_byte_rate=1048576", "consumer_byte_rate=2097152")
	wantIn(3, "producer_byte_rate=4096")
	wantIn(5, "producer_byte_rate=1048576")
	if strings.Contains(results[5].Stdout, "consumer_byte_rate") {
		t.Errorf("consumer_byte_rate still described after --delete-config:\n%v", results[5])
	}
	got := brokertest.DescribeQuotas(t, brokertest.NewClient(t, b.Addr), false)
	want := []string{"client-id=<default>: producer_byte_rate=4096", "user=alice: producer_byte_rate=1048576"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after kafka-configs: %q, want %q", got, want)
	}
}
