package compat_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/brokertest"
	"github.com/tributary-io/tributary/internal/testenv"
)

// kafkaConsoleConsumer is kafka-console-consumer.sh.
const kafkaConsoleConsumer = "org.apache.kafka.tools.consumer.ConsoleConsumer"

// TestTopicCompressionJavaConsumer: Apache Kafka's console consumer (the
// Java client) reads every codec the broker re-encodes batches into,
// raw snappy included (the Java client writes xerial-framed snappy).
func TestTopicCompressionJavaConsumer(t *testing.T) {
	testenv.Needs(t, testenv.JVM)
	b := testenv.StartBroker(t)
	codecs := []string{"gzip", "snappy", "lz4", "zstd", "uncompressed"}
	want := map[string][]string{}
	var runs []testenv.KafkaToolRun
	for _, codec := range codecs {
		topic := "java-" + codec
		brokertest.CreateTopic(t, b.Addr, topic, 1, map[string]*string{"compression.type": kmsg.StringPtr(codec)})
		sent := kgo.NoCompression()
		if codec == "uncompressed" {
			sent = kgo.SnappyCompression()
		}
		want[codec] = brokertest.ProduceBatches(t, b.Addr, topic, 120, sent)
		runs = append(runs, testenv.KafkaToolRun{Class: kafkaConsoleConsumer, Args: []string{
			"--bootstrap-server", b.Addr, "--topic", topic, "--from-beginning", "--max-messages", "120", "--timeout-ms", "30000"}})
	}
	for i, r := range testenv.RunKafkaTools(t, runs...) {
		got := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
		if r.Exit != 0 || strings.Join(got, "\n") != strings.Join(want[codecs[i]], "\n") {
			t.Errorf("%s topic: %d of %d records read back right\n%.2000v", codecs[i], countEqual(got, want[codecs[i]]), len(want[codecs[i]]), r)
		}
	}
}

func countEqual(a, b []string) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			n++
		}
	}
	return n
}
