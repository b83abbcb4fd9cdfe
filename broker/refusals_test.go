package broker_test

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker"
	"github.com/tributary-io/tributary/internal/testenv"
)

// Refused features, with the clients that met them. A transactional Java
// producer fails at once with Tributary's reason (FindCoordinator v4+ gets
// INVALID_REQUEST, whose message Java shows; TRANSACTIONAL_ID_AUTHORIZATION_
// FAILED read as an ACL problem), and a Java consumer with
// group.protocol=consumer fails at once (its own message: it does not show
// the broker's). The broker logs one line per feature, not one per
// refusal, naming it.
func TestRefusedFeaturesWithJavaClients(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM with Apache Kafka's clients")
	}
	logs := &lockedBuffer{}
	b := testenv.StartBroker(t, testenv.WithConfig(func(c *broker.Config) { c.Logger = warnRecorder(logs) }))
	createTopic(t, b.Addr, "refusals", 1, nil)
	res := testenv.RunKafkaTools(t,
		testenv.KafkaToolRun{Class: "org.apache.kafka.tools.ProducerPerformance", Args: []string{
			"--topic", "refusals", "--num-records", "1", "--record-size", "10", "--throughput", "-1",
			"--transactional-id", "app-1", "--producer-props", "bootstrap.servers=" + b.Addr, "max.block.ms=20000"}},
		testenv.KafkaToolRun{Class: testenv.KafkaConsoleConsumer, Args: []string{
			"--bootstrap-server", b.Addr, "--topic", "refusals", "--group", "kip848-java", "--timeout-ms", "20000",
			"--consumer-property", "group.protocol=consumer"}},
	)
	if r := res[0]; r.Exit == 0 || !strings.Contains(r.Stdout+r.Stderr, "does not support Kafka transactions") {
		t.Errorf("want the transactional producer to fail with Tributary's reason:\n%v", r)
	}
	if r := res[1]; !strings.Contains(r.Stderr, "does not support the new CONSUMER group protocol") {
		t.Errorf("want the consumer to stop for the consumer group protocol:\n%v", r)
	}
	out := logs.String()
	for _, feature := range []string{`feature=transactions`, `feature="consumer group protocol"`} {
		if n := strings.Count(out, feature); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", feature, n, out)
		}
	}
}

// A librdkafka consumer with group.protocol=consumer stops at once with a
// fatal error; it used to wait silently, reading nothing.
func TestConsumerProtocolFailsAtOnceWithLibrdkafka(t *testing.T) {
	if err := exec.Command("python3", "-c", "import confluent_kafka").Run(); err != nil {
		t.Fatalf("Python's confluent-kafka is missing: python3 -m pip install confluent-kafka (scripts/install-deps.sh does it)")
	}
	b := testenv.StartBroker(t)
	createTopic(t, b.Addr, "kip848", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	script := filepath.Join("..", "scripts", "kafka", "librdkafka_consumer_protocol.py")
	out, err := exec.CommandContext(ctx, "python3", script, b.Addr, "kip848").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ConsumerGroupHeartbeat fatal error") {
		t.Fatalf("librdkafka with group.protocol=consumer did not stop with a fatal error (after %v):\n%s", time.Since(start).Round(time.Millisecond), out)
	}
}

// warnRecorder is a broker logger that keeps WARN and ERROR lines.
func warnRecorder(w *lockedBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
