package compat_test

// Apache Kafka's own command-line tools against Tributary: each run must
// exit 0 and have the effect it has against Kafka. All runs share one JVM
// (testenv.RunKafkaTools), so the test costs one JVM start.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

func TestKafkaCommandLineTools(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	adm, _ := brokertest.NewAdmin(t, b.Addr)
	ctx := context.Background()

	// A topic with data and a group with committed offsets, for the tools
	// that read or trim them.
	brokertest.CreateTopic(t, b.Addr, "tools-data", 1, nil)
	stamps := []int64{1000, 9000, 3000, 4000, 5000}
	brokertest.ProduceSized(t, b.Addr, "tools-data", 0, len(stamps), func(i int) time.Time { return time.UnixMilli(stamps[i]) })
	var committed kadm.Offsets
	committed.Add(kadm.Offset{Topic: "tools-data", Partition: 0, At: 2})
	if _, err := adm.CommitOffsets(ctx, "tools-app", committed); err != nil {
		t.Fatal(err)
	}
	deleteJSON := filepath.Join(t.TempDir(), "delete.json")
	if err := os.WriteFile(deleteJSON, []byte(`{"version":1,"partitions":[{"topic":"tools-data","partition":0,"offset":3}]}`), 0o644); err != nil {
		t.Fatal(err)
	}

	bs := []string{"--bootstrap-server", b.Addr}
	run := func(class string, args ...string) testenv.KafkaToolRun {
		return testenv.KafkaToolRun{Class: class, Args: append(append([]string{}, bs...), args...)}
	}
	runs := []testenv.KafkaToolRun{
		run(testenv.KafkaTopics, "--create", "--topic", "tools", "--partitions", "2", "--replication-factor", "1", "--config", "retention.ms=86400000"),
		run(testenv.KafkaTopics, "--alter", "--topic", "tools", "--partitions", "4"),
		run(testenv.KafkaTopics, "--describe", "--topic", "tools"),
		run(testenv.KafkaConfigs, "--alter", "--entity-type", "topics", "--entity-name", "tools", "--add-config", "retention.ms=3600000,max.message.bytes=2000000"),
		run(testenv.KafkaConfigs, "--describe", "--entity-type", "topics", "--entity-name", "tools"),
		run(testenv.KafkaConfigs, "--describe", "--entity-type", "brokers", "--entity-name", "0", "--all"),
		run(testenv.KafkaGetOffsets, "--topic", "tools-data", "--time", "-3"),
		run(testenv.KafkaDeleteRecords, "--offset-json-file", deleteJSON),
		run(testenv.KafkaGetOffsets, "--topic", "tools-data", "--time", "-2"),
		run(testenv.KafkaConsumerGroups, "--delete-offsets", "--group", "tools-app", "--topic", "tools-data"),
		run(testenv.KafkaLogDirs, "--describe", "--topic-list", "tools-data"),
	}
	results := testenv.RunKafkaTools(t, runs...)
	for _, r := range results {
		if r.Exit != 0 {
			t.Errorf("%v", r)
		}
	}
	out := func(i int) string { return results[i].Stdout }
	wantIn := func(i int, subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(out(i), s) {
				t.Errorf("output of run %d lacks %q:\n%v", i, s, results[i])
			}
		}
	}
	wantIn(2, "PartitionCount: 4", "TopicId: ")
	wantIn(4, "retention.ms=3600000", "max.message.bytes=2000000")
	wantIn(5, "log.segment.bytes=", "message.max.bytes=")
	wantIn(6, "tools-data:0:1")
	wantIn(7, "low_watermark: 3")
	wantIn(8, "tools-data:0:3")
	wantIn(10, `"partition":"tools-data-0"`, `"size":`)

	// The effects, read back through the protocol.
	td, err := adm.ListTopics(ctx, "tools")
	if err != nil || len(td["tools"].Partitions) != 4 {
		t.Errorf("topic tools: %v %+v, want 4 partitions", err, td["tools"])
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "tools")
	if err != nil {
		t.Fatal(err)
	}
	got := brokertest.ConfigsByName(t, rcs, "tools")
	if c := got["retention.ms"]; c.MaybeValue() != "3600000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Errorf("retention.ms = %s from %v after kafka-configs", c.MaybeValue(), c.Source)
	}
	fetched, err := adm.FetchOffsets(ctx, "tools-app")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("tools-data", 0); ok {
		t.Errorf("kafka-consumer-groups --delete-offsets left %+v", o)
	}
}
