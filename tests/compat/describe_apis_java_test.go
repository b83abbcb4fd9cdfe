package compat_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// What Kafka's own tools asked of Tributary and did not get:
// DescribeProducers (kafka-transactions describe-producers), the BROKER_LOGGER
// configs (kafka-configs --entity-type broker-loggers: the log level, read
// and changed at run time) and every SCRAM user (kafka-configs --describe
// --entity-type users printed nothing). kafka-topics --describe now goes
// through DescribeTopicPartitions, which Java prefers when advertised.
func TestDescribeAPIsWithKafkaTools(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	dir := t.TempDir()
	brokertest.SetUser(t, dir, "alice", "SCRAM-SHA-512", "alice-secret")
	brokertest.SetUser(t, dir, "bob", "SCRAM-SHA-256", "bob-secret")
	level := new(slog.LevelVar)
	level.Set(slog.LevelWarn)
	logs := &testenv.SyncBuffer{}
	b := testenv.StartBroker(t, testenv.WithDataDir(dir), testenv.WithConfig(func(c *broker.Config) {
		c.LogLevel = level
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	}))
	brokertest.CreateTopic(t, b.Addr, "described", 3, nil)
	cl := brokertest.NewClient(t, b.Addr, kgo.DefaultProduceTopic("described"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	id := "0"
	bs := []string{"--bootstrap-server", b.Addr}
	run := func(class string, args ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: class, Args: append(append([]string{}, bs...), args...)}
	}
	loggers := []string{"--entity-type", "broker-loggers", "--entity-name", id}
	res := testenv.RunKafkaTools(t,
		run(testenv.KafkaTopics, "--describe", "--topic", "described"),
		run("org.apache.kafka.tools.TransactionsCommand", "describe-producers", "--topic", "described", "--partition", "0"),
		run(testenv.KafkaConfigs, append([]string{"--describe"}, loggers...)...),
		run(testenv.KafkaConfigs, append([]string{"--alter", "--add-config", "root=DEBUG"}, loggers...)...),
		run(testenv.KafkaConfigs, append([]string{"--describe"}, loggers...)...),
		run(testenv.KafkaConfigs, append([]string{"--alter", "--delete-config", "root"}, loggers...)...),
		run(testenv.KafkaConfigs, "--describe", "--entity-type", "users"),
	)
	for _, r := range res {
		if r.Exit != 0 {
			t.Errorf("%v", r)
		}
	}
	wantIn := func(i int, subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(res[i].Stdout, s) {
				t.Errorf("output of run %d lacks %q:\n%v", i, s, res[i])
			}
		}
	}
	wantIn(0, "PartitionCount: 3", "Partition: 0", "Partition: 2")
	wantIn(1, "ProducerId", "LastSequence")
	if fields := strings.Fields(res[1].Stdout); len(fields) < 2 {
		t.Errorf("describe-producers lists no producer:\n%v", res[1])
	}
	wantIn(2, "root=WARN")
	wantIn(4, "root=DEBUG")
	wantIn(6, "alice", "SCRAM-SHA-512", "bob", "SCRAM-SHA-256")
	if got := level.Level(); got != slog.LevelWarn {
		t.Errorf("log level after --delete-config root: %v, want WARN (the level at start)", got)
	}
	if !strings.Contains(logs.String(), "log level changed at run time") {
		t.Errorf("the change of log level was not logged:\n%s", logs.String())
	}
}
